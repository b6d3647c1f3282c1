#pragma once
// The serving clients not answering a request now (docs/design.md §18). A request takes one at once or is
// answered 429: the pool bounds the requests in the cluster, and so the scheduler's queue.
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

namespace dualpath::serve {

class client_pool {
 public:
  explicit client_pool(uint32_t n) {
    for (uint32_t i = n; i-- > 0;) free_.push_back(i);
  }
  std::optional<uint32_t> take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) return std::nullopt;
    const uint32_t i = free_.back();
    free_.pop_back();
    return i;
  }
  void give(uint32_t i) {
    std::lock_guard lock(mutex_);
    free_.push_back(i);
  }
  uint32_t free() const {
    std::lock_guard lock(mutex_);
    return uint32_t(free_.size());
  }

 private:
  mutable std::mutex mutex_;
  std::vector<uint32_t> free_;
};

}  // namespace dualpath::serve
