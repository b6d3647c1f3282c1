#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "gpu/hbm_arena.hpp"

using namespace dualpath::gpu;

TEST_CASE("hbm arena refuses what does not fit and reports free bytes") {
  hbm_arena arena(4096, 256);
  CHECK(arena.free_bytes() == 4096);
  auto a = arena.allocate(1000);  // rounds to 1024
  auto b = arena.allocate(2048);
  CHECK(arena.free_bytes() == 1024);
  CHECK_FALSE(arena.try_allocate(1025).has_value());
  CHECK_THROWS_AS(arena.allocate(2000), hbm_full);
  std::memset(a.data, 1, a.bytes);  // the memory is real and writable
  std::memset(b.data, 2, b.bytes);
  CHECK(a.data[999] == std::byte{1});
  arena.free(a);
  CHECK(arena.free_bytes() == 2048);
  CHECK(arena.largest_free() == 1024);  // two separate 1024 holes around b
  arena.free(b);
  CHECK(arena.largest_free() == 4096);  // coalesced back into one range
  CHECK(arena.allocations() == 0);
  CHECK_THROWS_AS(arena.free(b), std::logic_error);
}

TEST_CASE("hbm arena reuses freed ranges under churn") {
  hbm_arena arena(1 << 20, 256);
  std::vector<hbm_allocation> live;
  for (int round = 0; round < 50; ++round) {
    while (auto a = arena.try_allocate(256 * (1 + round % 7))) live.push_back(*a);
    for (size_t i = 0; i < live.size(); i += 2) arena.free(live[i]);
    std::vector<hbm_allocation> keep;
    for (size_t i = 1; i < live.size(); i += 2) keep.push_back(live[i]);
    live = keep;
  }
  for (auto& a : live) arena.free(a);
  CHECK(arena.free_bytes() == arena.capacity());
  CHECK(arena.largest_free() == arena.capacity());
}

TEST_CASE("hbm arena pages use free bytes a contiguous request cannot, and come back all or none") {
  hbm_arena arena(8 * 1024, 256);
  std::vector<hbm_allocation> pages;
  for (int i = 0; i < 8; ++i) pages.push_back(arena.allocate(1024));
  for (size_t i = 0; i < pages.size(); i += 2) arena.free(pages[i]);  // four 1-KB holes, none adjacent
  CHECK(arena.free_bytes() == 4096);
  CHECK_FALSE(arena.try_allocate(3 * 1024).has_value());  // one range of 3 KB: no hole is that large
  auto three = arena.try_allocate_each(3, 1024);
  REQUIRE(three.has_value());
  CHECK(three->size() == 3);
  CHECK(arena.free_bytes() == 1024);
  CHECK_FALSE(arena.try_allocate_each(2, 1024).has_value());  // all or none: the one free page stays free
  CHECK(arena.free_bytes() == 1024);
  CHECK(arena.allocations() == 7);
  arena.free(*three);
  for (size_t i = 1; i < pages.size(); i += 2) arena.free(pages[i]);
  CHECK(arena.largest_free() == arena.capacity());
}

TEST_CASE("hbm arena pages refused when free bytes are only in ranges smaller than a page") {
  hbm_arena arena(4096, 256);
  auto a = arena.allocate(256), b = arena.allocate(1024), c = arena.allocate(256), d = arena.allocate(2560);
  arena.free(a);
  arena.free(c);                                             // 512 bytes free, as two 256-byte ranges
  CHECK_FALSE(arena.try_allocate_each(1, 512).has_value());  // as many bytes free, in no range of 512
  CHECK(arena.free_bytes() == 512);
  CHECK(arena.allocations() == 2);
  arena.free(b);
  arena.free(d);
}
