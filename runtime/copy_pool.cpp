#include "runtime/copy_pool.hpp"

#include <sys/mman.h>

#include <algorithm>

namespace dualpath::runtime {

namespace {
constexpr uint64_t chunk_target_bytes = 16ull << 20;  // one mapping per 16 MiB of copies
}

copy_pool::copy_pool(uint64_t block_bytes, uint64_t capacity_bytes)
    : block_bytes_(std::max<uint64_t>(block_bytes, 1)),
      capacity_blocks_(capacity_bytes ? capacity_bytes / block_bytes_ : UINT64_MAX),
      chunk_blocks_(std::max<uint64_t>(1, chunk_target_bytes / block_bytes_)) {}

copy_pool::~copy_pool() {
  for (auto [p, bytes] : chunks_) munmap(p, bytes);
}

std::byte* copy_pool::take() {
  std::lock_guard<std::mutex> g(mutex_);
  if (in_use_ >= capacity_blocks_) return nullptr;
  if (free_.empty()) {
    // Map the next chunk (never more than the bound); its pages become resident only as copies are written.
    const uint64_t blocks = std::min(chunk_blocks_, capacity_blocks_ - carved_);
    if (blocks == 0) return nullptr;
    const uint64_t bytes = blocks * block_bytes_;
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    chunks_.emplace_back(static_cast<std::byte*>(p), bytes);
    for (uint64_t i = blocks; i-- > 0;) free_.push_back(static_cast<std::byte*>(p) + i * block_bytes_);
    carved_ += blocks;
  }
  std::byte* copy = free_.back();
  free_.pop_back();
  peak_ = std::max(peak_, ++in_use_);
  return copy;
}

void copy_pool::give(std::byte* copy) {
  if (!copy) return;
  std::lock_guard<std::mutex> g(mutex_);
  free_.push_back(copy);
  --in_use_;
}

uint64_t copy_pool::in_use_bytes() const {
  std::lock_guard<std::mutex> g(mutex_);
  return in_use_ * block_bytes_;
}

uint64_t copy_pool::peak_bytes() const {
  std::lock_guard<std::mutex> g(mutex_);
  return peak_ * block_bytes_;
}

uint64_t copy_pool::mapped_bytes() const {
  std::lock_guard<std::mutex> g(mutex_);
  return carved_ * block_bytes_;
}

}  // namespace dualpath::runtime
