#include "gpu/huge_pages.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <new>

namespace dualpath::gpu {

void* huge_page_alloc(std::size_t bytes) {
  constexpr std::size_t huge = std::size_t(2) << 20, line = 64;
  const std::size_t want = std::max<std::size_t>(bytes, 1);
  const std::size_t align = want >= huge ? huge : line, rounded = (want + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (!p) throw std::bad_alloc();
  if (align == huge) madvise(p, rounded, MADV_HUGEPAGE);  // before the first touch: faulted in as huge pages
  return p;
}

}  // namespace dualpath::gpu
