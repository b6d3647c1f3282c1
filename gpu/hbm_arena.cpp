#include "gpu/hbm_arena.hpp"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>

namespace dualpath::gpu {

namespace {
void check_alignment(uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw std::invalid_argument(fmt::format("hbm_arena: alignment {} is not a power of two", alignment));
}
}  // namespace

hbm_arena::hbm_arena(uint64_t capacity_bytes, uint64_t alignment)
    : capacity_(capacity_bytes), alignment_(alignment), owned_(true) {
  check_alignment(alignment);
  if (capacity_ > 0) {
    // MAP_NORESERVE: a big emulated HBM costs only the pages actually written.
    void* p = mmap(nullptr, capacity_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      throw std::runtime_error(fmt::format("hbm_arena: cannot reserve {} bytes of address space", capacity_));
    base_ = static_cast<std::byte*>(p);
    free_[0] = capacity_;
  }
  free_total_ = capacity_;
}

hbm_arena::hbm_arena(std::byte* base, uint64_t capacity_bytes, uint64_t alignment)
    : base_(base), capacity_(capacity_bytes), alignment_(alignment), owned_(false) {
  check_alignment(alignment);
  if (capacity_ > 0) free_[0] = capacity_;
  free_total_ = capacity_;
}

hbm_arena::~hbm_arena() {
  if (owned_ && base_) munmap(base_, capacity_);
}

std::optional<hbm_allocation> hbm_arena::try_allocate(uint64_t bytes) {
  std::lock_guard lock(mutex_);
  return allocate_locked(bytes);
}

std::optional<std::vector<hbm_allocation>> hbm_arena::try_allocate_each(uint32_t count, uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (uint64_t(count) * round_up(std::max<uint64_t>(bytes, 1)) > free_total_) return std::nullopt;
  std::vector<hbm_allocation> pages;
  pages.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    auto a = allocate_locked(bytes);
    if (!a) {  // free bytes enough, but in ranges smaller than a page (other sizes share the arena)
      for (const auto& p : pages) free_locked(p);
      return std::nullopt;
    }
    pages.push_back(*a);
  }
  return pages;
}

void hbm_arena::free(const std::vector<hbm_allocation>& pages) {
  std::lock_guard lock(mutex_);
  for (const auto& p : pages) free_locked(p);
}

std::optional<hbm_allocation> hbm_arena::allocate_locked(uint64_t bytes) {
  const uint64_t need = round_up(std::max<uint64_t>(bytes, 1));
  for (auto it = free_.begin(); it != free_.end(); ++it) {  // first fit keeps low addresses dense
    if (it->second < need) continue;
    const uint64_t offset = it->first, size = it->second;
    free_.erase(it);
    if (size > need) free_[offset + need] = size - need;
    used_[offset] = need;
    free_total_ -= need;
    return hbm_allocation{offset, bytes, base_ ? base_ + offset : nullptr};
  }
  return std::nullopt;
}

hbm_allocation hbm_arena::allocate(uint64_t bytes) {
  if (auto a = try_allocate(bytes)) return *a;
  throw hbm_full(fmt::format("HBM arena full: {} bytes requested, {} of {} free (largest free range {})", bytes,
                             free_bytes(), capacity_, largest_free()));
}

void hbm_arena::free(const hbm_allocation& a) {
  std::lock_guard lock(mutex_);
  free_locked(a);
}

void hbm_arena::free_locked(const hbm_allocation& a) {
  auto it = used_.find(a.offset);
  if (it == used_.end())
    throw std::logic_error(fmt::format("hbm_arena: free of offset {} that is not allocated", a.offset));
  uint64_t offset = it->first, size = it->second;
  used_.erase(it);
  free_total_ += size;
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + size == next->first) {  // merge with the following range
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {  // merge with the preceding range
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += size;
      return;
    }
  }
  free_[offset] = size;
}

uint64_t hbm_arena::free_bytes() const {
  std::lock_guard lock(mutex_);
  return free_total_;
}

uint64_t hbm_arena::largest_free() const {
  std::lock_guard lock(mutex_);
  uint64_t best = 0;
  for (const auto& [offset, size] : free_) best = std::max(best, size);
  return best;
}

uint64_t hbm_arena::allocations() const {
  std::lock_guard lock(mutex_);
  return used_.size();
}

}  // namespace dualpath::gpu
