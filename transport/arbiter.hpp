#pragma once
// Two-class arbiter of one CNIC queue (docs/design.md §8). With isolation on, `model` is served first and
// `kv` gets `kv_share` of the service (counted in bytes) while both classes wait, so bulk KV only
// uses the gaps, like a low-priority virtual lane with ~1% weight. Within `kv`, the peers a CNIC sends to
// share it byte for byte (deficit round robin), as a NIC serves its queue pairs in turn: a small transfer to
// one peer does not wait behind a bulk one to another. With isolation off it is one FIFO.
// Pure logic, no fabric types: items are opaque ids with a size and a flow (the peer).
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>

#include "transport/endpoint.hpp"

namespace dualpath::transport {

struct arbiter_item {
  traffic_class tc = traffic_class::kv;
  uint64_t id = 0;
  uint64_t bytes = 0;
  uint32_t flow = 0;  // the peer it goes to or comes from: kv flows share the lane byte for byte
};

// The kv lane: one FIFO per flow, the flows served by deficit round robin. Each turn of a flow adds
// `quantum` bytes to its deficit and serves its head while the deficit covers it, so over time every
// backlogged flow gets the same bytes, and one flow alone is plain FIFO.
class fair_lane {
 public:
  explicit fair_lane(uint64_t quantum) : quantum_(quantum) {}
  void push(const arbiter_item& item);
  // Back at the head of its flow, and its flow's turn next (it was taken from there and could not go).
  void push_front(const arbiter_item& item);
  const arbiter_item& front() const { return flows_.at(ring_.front()).items.front(); }
  arbiter_item& front() { return flows_.at(ring_.front()).items.front(); }
  // Queues `item` right behind the head, in the head's flow.
  void insert_after_front(const arbiter_item& item);
  void pop_front();
  bool empty() const { return size_ == 0; }
  uint64_t size() const { return size_; }

 private:
  struct flow {
    std::deque<arbiter_item> items;
    uint64_t deficit = 0;
    bool credited = false;  // this turn's quantum added
  };
  // Turns the ring until its first flow's head fits the flow's deficit (each full turn adds a quantum to
  // every flow, so it ends).
  void settle();

  uint64_t quantum_;
  std::unordered_map<uint32_t, flow> flows_;  // flows with items
  std::deque<uint32_t> ring_;                 // their turns; front() is served
  uint64_t size_ = 0;
};

class arbiter {
 public:
  // kv_share must be in [0, 1); 0 = strict priority for model. `kv_quantum`: the bytes a kv flow sends a turn.
  arbiter(bool isolation, double kv_share, uint64_t kv_quantum = default_kv_quantum);
  // Small against a slice, so flows interleave finely; a slice waits a few turns to fit.
  static constexpr uint64_t default_kv_quantum = 64 << 10;

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
  fair_lane kv_;
};

}  // namespace dualpath::transport
