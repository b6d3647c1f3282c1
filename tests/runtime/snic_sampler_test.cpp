// A node's SNIC history stays bounded however long it runs (runtime/snic_sampler.hpp): past the cap every other
// sample goes and the period doubles, and what is kept is still in time order with the latest bytes.
#include <doctest/doctest.h>

#include <chrono>

#include "runtime/snic_sampler.hpp"

using dualpath::runtime::snic_sampler;
using namespace std::chrono_literals;

TEST_CASE("snic_sampler: bounded history, coarser past the cap, the latest bytes kept") {
  snic_sampler s(1ms, 8);
  auto now = std::chrono::steady_clock::time_point{} + 1s;
  uint64_t recorded = 0, last = 0;
  for (uint64_t bytes = 1; bytes <= 1000; ++bytes, now += 1ms)
    if (s.due(now)) s.record(now, bytes, bytes % 7), ++recorded, last = bytes;
  const auto kept = s.samples();
  CHECK(kept.size() <= 8);
  CHECK(kept.size() >= 4);
  CHECK(recorded < 1000);  // the period grew: fewer samples were taken as the history got coarser
  for (size_t i = 1; i < kept.size(); ++i) {
    CHECK(kept[i].t_ns > kept[i - 1].t_ns);
    CHECK(kept[i].read_bytes > kept[i - 1].read_bytes);
  }
  CHECK(kept.back().read_bytes == last);  // thinning keeps the newest sample
  CHECK(last > 800);
}

TEST_CASE("snic_sampler: under the cap every due sample is kept at the set period") {
  snic_sampler s(2ms, 100);
  auto now = std::chrono::steady_clock::time_point{} + 1s;
  for (int i = 0; i < 40; ++i, now += 1ms)
    if (s.due(now)) s.record(now, uint64_t(i), 0);
  CHECK(s.samples().size() == 20);
}
