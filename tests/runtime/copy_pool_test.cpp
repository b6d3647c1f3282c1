// runtime/copy_pool.hpp: the write-back's block copies, bounded and reused.
#include <doctest/doctest.h>

#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "runtime/copy_pool.hpp"

using dualpath::runtime::copy_pool;

TEST_CASE("a bounded copy pool hands out distinct, writable copies up to its bound and no further") {
  const uint64_t block = 64 * 1024;
  copy_pool pool(block, 5 * block + block / 2);  // room for 5 whole copies
  std::vector<std::byte*> held;
  for (int i = 0; i < 5; ++i) {
    std::byte* c = pool.take();
    REQUIRE(c != nullptr);
    std::memset(c, i + 1, block);  // the whole copy is writable
    held.push_back(c);
  }
  CHECK(std::set<std::byte*>(held.begin(), held.end()).size() == 5);
  CHECK(pool.take() == nullptr);
  CHECK(pool.in_use_bytes() == 5 * block);
  for (int i = 0; i < 5; ++i) CHECK(held[size_t(i)][block - 1] == std::byte(i + 1));  // no copy overlaps another
  pool.give(held.back());
  held.pop_back();
  std::byte* again = pool.take();
  CHECK(again != nullptr);
  held.push_back(again);
  for (auto* c : held) pool.give(c);
  CHECK(pool.in_use_bytes() == 0);
  CHECK(pool.peak_bytes() == 5 * block);
  CHECK(pool.mapped_bytes() == 5 * block);
}

TEST_CASE("an unbounded copy pool maps no more than its peak, however many copies pass through it") {
  const uint64_t block = 1 << 20;
  copy_pool pool(block, 0);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::byte*> held;
    for (int i = 0; i < 20; ++i) held.push_back(pool.take());
    for (auto* c : held) REQUIRE(c != nullptr);
    for (auto* c : held) pool.give(c);
  }
  CHECK(pool.peak_bytes() == 20 * block);
  CHECK(pool.mapped_bytes() == 32 * block);  // two 16-MiB chunks of 1-MiB copies for the 20 in use
}

TEST_CASE("copies taken and given on different threads all come back") {
  copy_pool pool(4096, 64 * 4096);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        std::byte* c = pool.take();
        if (c) {
          c[0] = std::byte(1);
          pool.give(c);
        }
      }
    });
  for (auto& t : threads) t.join();
  CHECK(pool.in_use_bytes() == 0);
  CHECK(pool.peak_bytes() <= 4 * 4096);
  CHECK(pool.peak_bytes() >= 4096);
}
