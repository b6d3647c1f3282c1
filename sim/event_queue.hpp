#pragma once
// The simulator's clock: a binary min-heap of (time, sequence) so events at equal times run in the order
// they were scheduled, which makes every run deterministic.
#include <cstdint>
#include <queue>
#include <vector>

namespace dualpath::sim {

enum class event_kind : uint8_t {
  arrival,        // agent a submits its next turn
  load_done,      // one of agent a's loads (or reservation) completed
  pass_done,      // engine e's prefill pass ended
  round,          // the scheduler's fetch round
  admitted,       // agent a's KV is in its decode engine's HBM
  step_done,      // engine e's decode step ended
  turn_done,      // agent a's turn answered (its writes done)
  policy_switch,  // [[schedule.switch]] entry id takes effect
  sample,         // every node's SNIC is sampled for snic_over_time
  plan,           // adaptive P/D: the planner looks at the window that ends now
  role_switched,  // adaptive P/D: node id serves in its new role
};

struct event {
  double t = 0;
  uint64_t seq = 0;
  event_kind kind = event_kind::arrival;
  uint32_t id = 0;   // agent or engine
  uint32_t tag = 0;  // step_done: the engine's step version
  bool operator>(const event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

class event_queue {
 public:
  void push(double t, event_kind kind, uint32_t id, uint32_t tag = 0) { heap_.push({t, next_++, kind, id, tag}); }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  event pop() {
    event e = heap_.top();
    heap_.pop();
    return e;
  }

 private:
  std::priority_queue<event, std::vector<event>, std::greater<event>> heap_;
  uint64_t next_ = 0;
};

}  // namespace dualpath::sim
