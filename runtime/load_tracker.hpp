#pragma once
// Loads of Full Blocks in flight through the SNIC gate (docs/design.md §9). Each block read carries its
// (load, block) pair packed into the read's user data; completions are matched by hash lookup, and a load
// finishes when its last block is back. A completion that names no known load (or an index out of range)
// is counted and dropped, never thrown. A load past its deadline is answered at once (timeout, no slots)
// but stays tracked: its slots are handed back only when its last read has landed, since the reads still
// write into them. Not thread-safe: the node's progress thread owns it.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/block_key.hpp"
#include "runtime/kv_types.hpp"
#include "storage/block_store.hpp"

namespace dualpath::runtime {

class load_tracker {
 public:
  using done_fn = std::function<void(load_result)>;
  using clock = std::chrono::steady_clock;
  static constexpr unsigned index_bits = 20;  // blocks per load: up to 2^20 (a 64M-token prompt at 64 per block)
  static constexpr uint64_t max_blocks = uint64_t(1) << index_bits;

  // Registers a load whose block i is read into buffers[i]; answers the reads to submit, or a capacity
  // error for a load of more blocks than the packing holds.
  result<std::vector<storage::read_request>> add(const std::vector<block_key>& keys,
                                                 const std::vector<std::byte*>& buffers, load_result partial,
                                                 done_fn done, clock::time_point deadline = clock::time_point::max());
  // One block read came back. When it was its load's last: the load's callback and result, or for a load
  // already answered by `expire`, no callback and the slots to give back.
  std::optional<std::pair<done_fn, load_result>> complete(const storage::read_completion& c);
  // Loads past their deadline: their callbacks with a timeout (the slots stay with the tracker).
  std::vector<std::pair<done_fn, load_result>> expire(clock::time_point now = clock::now());

  bool empty() const { return loads_.empty(); }
  uint64_t stray() const { return stray_; }  // completions that matched nothing

  static uint64_t pack(uint64_t load, uint64_t index) { return (load << index_bits) | index; }

 private:
  struct pending {
    load_result result;
    std::vector<int8_t> state;  // 0 pending, 1 ok, -1 failed
    std::vector<status> reasons;
    size_t outstanding = 0;
    done_fn done;  // empty once answered by expire()
    clock::time_point deadline;
  };
  std::unordered_map<uint64_t, pending> loads_;
  uint64_t next_ = 1;
  uint64_t stray_ = 0;
};

// Why a block read failed, as the one error type.
status read_status(const storage::read_completion& c);

}  // namespace dualpath::runtime
