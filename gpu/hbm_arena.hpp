#pragma once
// An engine's HBM: a fixed-capacity arena (docs/design.md §4). Allocations that do not fit are refused (try_allocate
// returns nullopt, allocate throws hbm_full naming the sizes), never an out-of-memory crash. Free space is
// reportable for the leader's view. Thread-safe.
//
// Memory: by default the arena reserves host memory lazily (pages cost nothing until touched), which is what
// the cpu and modeled backends use; a caller may instead manage an external range (e.g. device memory).
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dualpath::gpu {

struct hbm_allocation {
  uint64_t offset = 0;  // from the arena's base
  uint64_t bytes = 0;   // as requested
  std::byte* data = nullptr;
};

class hbm_full : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class hbm_arena {
 public:
  // Reserves `capacity_bytes` of lazily committed host memory.
  explicit hbm_arena(uint64_t capacity_bytes, uint64_t alignment = 256);
  // Manages [base, base + capacity_bytes) owned by the caller (base may be a device pointer; never touched).
  hbm_arena(std::byte* base, uint64_t capacity_bytes, uint64_t alignment = 256);
  ~hbm_arena();
  hbm_arena(const hbm_arena&) = delete;
  hbm_arena& operator=(const hbm_arena&) = delete;

  std::optional<hbm_allocation> try_allocate(uint64_t bytes);
  hbm_allocation allocate(uint64_t bytes);  // throws hbm_full
  void free(const hbm_allocation& a);       // throws std::logic_error on a double or foreign free
  // `count` allocations of `bytes` each, all or none: paged KV (a decode request's Full Blocks), which any
  // free range of one block fits, so the arena's free bytes are all usable (one contiguous range per request
  // left holes no request fitted: docs/design.md §10).
  std::optional<std::vector<hbm_allocation>> try_allocate_each(uint32_t count, uint64_t bytes);
  void free(const std::vector<hbm_allocation>& pages);

  uint64_t capacity() const { return capacity_; }
  uint64_t free_bytes() const;
  uint64_t largest_free() const;  // the biggest single allocation that would succeed now
  uint64_t allocations() const;
  std::byte* base() const { return base_; }

 private:
  uint64_t round_up(uint64_t bytes) const { return (bytes + alignment_ - 1) / alignment_ * alignment_; }
  std::optional<hbm_allocation> allocate_locked(uint64_t bytes);
  void free_locked(const hbm_allocation& a);

  std::byte* base_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t alignment_ = 256;
  bool owned_ = false;
  mutable std::mutex mutex_;
  std::map<uint64_t, uint64_t> free_;  // offset -> size, coalesced
  std::map<uint64_t, uint64_t> used_;  // offset -> rounded size
  uint64_t free_total_ = 0;
};

}  // namespace dualpath::gpu
