#pragma once
// Requests an engine was told to cancel before it knew them (docs/design.md §18): a cancellation can overtake
// the assignment or hand-off it concerns, which is then dropped on arrival. Bounded: the oldest are forgotten
// (such a request then runs to its end and is answered to a client that ignores it, freeing what it held).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_set>

namespace dualpath::actors {

class cancelled_ids {
 public:
  void add(uint64_t id) {
    if (!set_.insert(id).second) return;
    order_.push_back(id);
    if (order_.size() > capacity) {
      set_.erase(order_.front());
      order_.pop_front();
    }
  }
  // Whether `id` was cancelled (and forgets it: each request arrives once).
  bool take(uint64_t id) { return set_.erase(id) > 0; }

  static constexpr size_t capacity = 1024;

 private:
  std::deque<uint64_t> order_;  // may still name ids already taken; they only age out
  std::unordered_set<uint64_t> set_;
};

}  // namespace dualpath::actors
