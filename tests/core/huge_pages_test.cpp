#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/huge_pages.hpp"

using namespace dualpath;

TEST_CASE("huge-page memory is 2 MB aligned and whole pages; small streamed memory is only cache-line aligned") {
  CHECK(huge_page_rounded(1) == huge_page_bytes);
  CHECK(huge_page_rounded(huge_page_bytes) == huge_page_bytes);
  CHECK(huge_page_rounded(huge_page_bytes + 1) == 2 * huge_page_bytes);

  void* big = allocate_huge_pages(huge_page_bytes + 100);
  REQUIRE(big != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(big) % huge_page_bytes == 0);
  std::memset(big, 1, 2 * huge_page_bytes);  // the whole rounded size is ours
  std::free(big);

  void* streamed = allocate_streamed(3 * huge_page_bytes);
  CHECK(reinterpret_cast<std::uintptr_t>(streamed) % huge_page_bytes == 0);
  std::free(streamed);
  void* small = allocate_streamed(100);
  CHECK(reinterpret_cast<std::uintptr_t>(small) % 64 == 0);
  std::free(small);

  std::vector<float, huge_page_allocator<float>> v(huge_page_bytes / sizeof(float), 1.0f);
  CHECK(reinterpret_cast<std::uintptr_t>(v.data()) % huge_page_bytes == 0);
  CHECK(v.back() == 1.0f);
}
