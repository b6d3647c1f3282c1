#pragma once
// The write-back's block copies (docs/design.md §9): a filled block is copied out of HBM and waits for the
// store in one of these. They are carved from memory mapped for this pool alone, a chunk at a time, and
// handed back to it, never to the heap: the heap keeps what its per-thread arenas once held, so copies made
// on the engines' threads and freed on the writer's left up to a gigabyte resident after the queue drained.
// Here the resident cost is the queue's peak, at most `capacity` bytes, and it is reported.
// Thread-safe.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace dualpath::runtime {

class copy_pool {
 public:
  // Copies of `block_bytes` each; at most `capacity_bytes` of them at once (0: no bound).
  copy_pool(uint64_t block_bytes, uint64_t capacity_bytes);
  ~copy_pool();
  copy_pool(const copy_pool&) = delete;
  copy_pool& operator=(const copy_pool&) = delete;

  // A free copy, or null when `capacity_bytes` are in use (or the system refused more memory).
  std::byte* take();
  // Gives back a copy `take` handed out.
  void give(std::byte* copy);

  uint64_t in_use_bytes() const;
  uint64_t peak_bytes() const;    // the most in use at once
  uint64_t mapped_bytes() const;  // mapped so far (never more than the peak rounded up to a chunk)

 private:
  const uint64_t block_bytes_, capacity_blocks_, chunk_blocks_;
  mutable std::mutex mutex_;
  std::vector<std::pair<std::byte*, uint64_t>> chunks_;  // address, bytes
  std::vector<std::byte*> free_;
  uint64_t carved_ = 0, in_use_ = 0, peak_ = 0;  // blocks
};

}  // namespace dualpath::runtime
