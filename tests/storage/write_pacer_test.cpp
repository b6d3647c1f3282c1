// The write direction of the emulated SNIC (docs/design.md §9): the pacer's own accounting on a made-up clock,
// and one real pace() run measured only as a lower bound (sleeping never ends early) with a generous ceiling.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "storage/write_pacer.hpp"

using namespace dualpath::storage;
using namespace std::chrono;
using clk = write_pacer::clock;

TEST_CASE("write pacer: back-to-back writes leave at the cap") {
  write_pacer p(1.0, 1 << 20);  // 1 GB/s = 1 byte per ns
  const auto t0 = clk::now();
  clk::time_point end;
  for (int i = 0; i < 10; ++i) end = p.reserve(1'000'000, t0);        // ten 1 MB writes asked for at once
  CHECK(duration_cast<nanoseconds>(end - t0).count() == 10'000'000);  // 10 MB at 1 GB/s = 10 ms
  const auto s = p.stats();
  CHECK(s.writes == 10);
  CHECK(s.bytes == 10'000'000);
  CHECK(s.link_busy_ns == 10'000'000);
  CHECK(s.cap_gb_per_s == 1.0);
}

TEST_CASE("write pacer: a short lag is caught up, a long idle link banks nothing") {
  write_pacer p(1.0, 1 << 20);  // depth: 100 ms of the cap
  const auto t0 = clk::now();
  CHECK(p.reserve(1'000'000, t0) == t0 + milliseconds(1));
  // The caller comes back 5 ms late (its write spent that long in the store): the link continues from 1 ms,
  // so this write leaves at 2 ms, before 'now'.
  CHECK(p.reserve(1'000'000, t0 + milliseconds(6)) == t0 + milliseconds(2));
  // After a second of silence the link starts over at now: no burst from the idle time.
  const auto later = t0 + seconds(1);
  CHECK(p.reserve(1'000'000, later) == later + milliseconds(1));
  // Whatever the pattern, bytes ≤ cap × (elapsed + depth): here 3 MB in 1.001 s.
}

TEST_CASE("write pacer: uncapped never waits and still counts") {
  write_pacer p(0);
  const auto t0 = clk::now();
  CHECK(p.reserve(1 << 30, t0) == t0);
  const auto s = p.stats();
  CHECK(s.bytes == (1u << 30));
  CHECK(s.link_busy_ns == 0);
  CHECK(s.cap_gb_per_s == 0);
}

TEST_CASE("write pacer: pace() holds writers to the cap (never faster than the cap)") {
  write_pacer p(0.2, 1 << 20);  // 0.2 GB/s: 4 MB take 20 ms
  const auto t0 = clk::now();
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w)
    writers.emplace_back([&] {
      for (int i = 0; i < 4; ++i) p.pace(500'000);  // two writers share one link
    });
  for (auto& t : writers) t.join();
  const double elapsed = duration<double>(clk::now() - t0).count();
  const double at_cap = 4e6 / 0.2e9;
  CHECK(elapsed >= 0.99 * at_cap);  // never faster than the cap (a loaded machine can only be slower)
  CHECK(p.stats().bytes == 4'000'000);
  CHECK(p.stats().link_busy_ns == 20'000'000);
}
