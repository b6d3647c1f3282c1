#include "runtime/slot_pool.hpp"

#include <algorithm>
#include <string>

namespace dualpath::runtime {

slot_pool::slot_pool(uint32_t node, uint32_t slots, std::chrono::milliseconds timeout)
    : node_(node), total_(slots), timeout_(timeout), low_water_(slots) {
  // Highest first, so the first grants take slots 0, 1, 2, ... from the back.
  for (uint32_t s = slots; s-- > 0;) free_.push_back(s);
}

void slot_pool::reserve(uint32_t count, done_fn done, clock::time_point now) {
  if (count > total_) {
    done(status(errc::capacity, "request needs " + std::to_string(count) + " Full Blocks but the DRAM buffer of node " +
                                    std::to_string(node_) + " holds " + std::to_string(total_)));
    return;
  }
  std::lock_guard<std::mutex> g(mutex_);
  queue_.push_back({count, now, std::move(done)});
}

void slot_pool::release(const std::vector<uint32_t>& slots) {
  std::lock_guard<std::mutex> g(mutex_);
  free_.insert(free_.end(), slots.begin(), slots.end());
}

bool slot_pool::progress(clock::time_point now) {
  std::vector<std::pair<done_fn, std::vector<uint32_t>>> granted;
  std::vector<done_fn> expired;
  {
    std::lock_guard<std::mutex> g(mutex_);
    while (!queue_.empty() && queue_.front().count <= free_.size()) {
      auto& r = queue_.front();
      std::vector<uint32_t> slots(free_.end() - r.count, free_.end());
      free_.resize(free_.size() - r.count);
      granted.emplace_back(std::move(r.done), std::move(slots));
      queue_.pop_front();
    }
    // Only the head can expire: it is the one holding the others back.
    while (!queue_.empty() && now - queue_.front().since > timeout_) {
      expired.push_back(std::move(queue_.front().done));
      queue_.pop_front();
    }
    low_water_ = std::min(low_water_, uint32_t(free_.size()));
  }
  for (auto& [done, slots] : granted) done(std::move(slots));
  for (auto& done : expired)
    done(status(errc::timeout, "timed out waiting for DRAM buffer space on node " + std::to_string(node_)));
  return !granted.empty() || !expired.empty();
}

uint32_t slot_pool::free_slots() const {
  std::lock_guard<std::mutex> g(mutex_);
  return uint32_t(free_.size());
}

uint32_t slot_pool::low_water() const {
  std::lock_guard<std::mutex> g(mutex_);
  return low_water_;
}

size_t slot_pool::waiting() const {
  std::lock_guard<std::mutex> g(mutex_);
  return queue_.size();
}

}  // namespace dualpath::runtime
