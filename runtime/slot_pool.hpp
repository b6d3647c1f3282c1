#pragma once
// A node's DRAM buffer cut into Full Block slots (docs/design.md §4), with FIFO reservations: the head of
// the queue waits until enough slots are free, so a large request is never starved by small ones, and a
// reservation waiting past its deadline fails. Thread-safe. Callbacks never run under the pool's lock:
// `reserve` fails an impossible request at once on the caller's thread, everything else runs from
// `progress` on the thread that calls it (the node's progress loop).
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "core/status.hpp"

namespace dualpath::runtime {

class slot_pool {
 public:
  using clock = std::chrono::steady_clock;
  using done_fn = std::function<void(result<std::vector<uint32_t>>)>;

  slot_pool(uint32_t node, uint32_t slots, std::chrono::milliseconds timeout);

  // Queues a reservation of `count` slots. One larger than the whole pool fails at once (capacity).
  void reserve(uint32_t count, done_fn done, clock::time_point now = clock::now());
  void release(const std::vector<uint32_t>& slots);
  // Grants waiting reservations in FIFO order and fails those past their deadline (timeout), running
  // their callbacks. True when any ran.
  bool progress(clock::time_point now = clock::now());

  uint32_t total() const { return total_; }
  uint32_t free_slots() const;
  uint32_t low_water() const;  // fewest slots ever free
  size_t waiting() const;

 private:
  struct pending {
    uint32_t count = 0;
    clock::time_point since;
    done_fn done;
  };
  const uint32_t node_, total_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  std::vector<uint32_t> free_;
  std::deque<pending> queue_;
  uint32_t low_water_ = 0;
};

}  // namespace dualpath::runtime
