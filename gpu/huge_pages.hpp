#pragma once
// Host memory for what a step streams from end to end (a cpu backend's weights, its resident KV): from one huge
// page (2 MB) on, 2 MB aligned and advised to be backed by huge pages before its first touch (advice the kernel
// may ignore), so streaming it is not also missing the TLB every 4 KB, as a node's arenas (host_buffer) are not.
#include <cstddef>
#include <cstdlib>

namespace dualpath::gpu {

// `bytes` of memory to release with std::free: huge-page backed from 2 MB on, cache-line aligned below (rounded
// up to 2 MB, a small model's matrices would take 30 times their size). Throws std::bad_alloc.
void* huge_page_alloc(std::size_t bytes);

template <class T>
struct huge_page_allocator {
  using value_type = T;
  huge_page_allocator() = default;
  template <class U>
  huge_page_allocator(const huge_page_allocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(huge_page_alloc(n * sizeof(T))); }
  void deallocate(T* p, std::size_t) { std::free(p); }
  bool operator==(const huge_page_allocator&) const { return true; }
};

}  // namespace dualpath::gpu
