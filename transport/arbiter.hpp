#pragma once
// Two-class arbiter of one CNIC queue (docs/design.md §8). With isolation on, `model` is served first and
// `kv` gets `kv_share` of the service (counted in bytes) while both classes wait, so bulk KV only
// uses the gaps, like a low-priority virtual lane with ~1% weight. With isolation off it is one FIFO.
// Pure logic, no fabric types: items are opaque ids with a size.
#include <cstdint>
#include <deque>
#include <optional>

#include "transport/endpoint.hpp"

namespace dualpath::transport {

struct arbiter_item {
  traffic_class tc = traffic_class::kv;
  uint64_t id = 0;
  uint64_t bytes = 0;
};

class arbiter {
 public:
  // kv_share must be in [0, 1); 0 = strict priority for model.
  arbiter(bool isolation, double kv_share);

  void push(const arbiter_item& item);
  // Puts an item back at the head of its queue (it could not be posted; keeps its turn).
  void push_front(const arbiter_item& item);
  // Shrinks the head of the kv queue to `head_bytes` and, when given, queues `rest` right behind it.
  void split_kv_front(uint64_t head_bytes, const std::optional<arbiter_item>& rest);
  // The item that should be served next, without removing it.
  std::optional<arbiter_item> peek() const;
  // Removes what peek() returned and charges its bytes to the share accounting.
  void pop();

  bool model_waiting() const { return !model_.empty(); }
  bool empty() const { return fifo_.empty() && model_.empty() && kv_.empty(); }
  uint64_t size() const { return fifo_.size() + model_.size() + kv_.size(); }

 private:
  bool kv_turn() const;

  bool isolation_;
  double kv_weight_;                // kv bytes earned per model byte served while kv waits
  double kv_credit_ = 0;            // bytes kv may send ahead of waiting model traffic
  std::deque<arbiter_item> fifo_;   // isolation off
  std::deque<arbiter_item> model_;  // isolation on
  std::deque<arbiter_item> kv_;
};

}  // namespace dualpath::transport
