#pragma once
// Host memory that is streamed end to end or registered for transfers: 2 MB aligned and advised to be backed by
// huge pages before its first touch (advice the kernel may ignore), so a pass streaming it does not also miss
// the TLB every 4 KB and the kernel's copies between processes pin one page per 2 MB. A node's buffers and
// arenas (transport::host_buffer), a cpu backend's weights and its resident KV.
#include <cstddef>
#include <cstdlib>

namespace dualpath {

constexpr std::size_t huge_page_bytes = std::size_t(2) << 20;

inline std::size_t huge_page_rounded(std::size_t bytes) {
  return (bytes + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
}

// huge_page_rounded(bytes) of memory, 2 MB aligned and advised; nullptr when it cannot be had. std::free frees it.
void* allocate_huge_pages(std::size_t bytes);

// `bytes` of memory that std::free frees: allocate_huge_pages from one huge page on, cache-line aligned below
// (rounded up to 2 MB, a small model's weight matrices would take 30 times their size). Throws std::bad_alloc.
void* allocate_streamed(std::size_t bytes);

// A standard allocator over allocate_streamed.
template <class T>
struct huge_page_allocator {
  using value_type = T;
  huge_page_allocator() = default;
  template <class U>
  huge_page_allocator(const huge_page_allocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(allocate_streamed(n * sizeof(T))); }
  void deallocate(T* p, std::size_t) { std::free(p); }
  bool operator==(const huge_page_allocator&) const { return true; }
};

}  // namespace dualpath
