#include "core/huge_pages.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <new>

namespace dualpath {

void* allocate_huge_pages(std::size_t bytes) {
  const std::size_t rounded = huge_page_rounded(std::max<std::size_t>(bytes, 1));
  void* p = std::aligned_alloc(huge_page_bytes, rounded);
  if (p) madvise(p, rounded, MADV_HUGEPAGE);  // before the first touch, so it is faulted in as huge pages
  return p;
}

void* allocate_streamed(std::size_t bytes) {
  constexpr std::size_t line = 64;
  void* p = bytes >= huge_page_bytes
                ? allocate_huge_pages(bytes)
                : std::aligned_alloc(line, (std::max<std::size_t>(bytes, 1) + line - 1) / line * line);
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace dualpath
