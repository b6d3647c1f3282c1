#pragma once
// Expert-parallel lockstep of a PE group (docs/design.md §7.6, `[cluster] ep_sync`): the prefill engines of
// a group run their passes in rounds, and every layer of a round ends for all its members together, as at
// the MoE all-to-all, so the slowest member sets each layer's pace. This is the bookkeeping only, plain C++
// without actors: the ep_group actor (actors/ep_group.cpp) turns its answers into replies.
//
// A round starts when no round runs and an engine asks to join; engines asking while a round runs wait
// for the next one and all start it together. When a round ends, the next one waits until each of its
// members has joined again or said it has no pass (idle), so engines that stay busy keep stepping together
// instead of taking turns. An engine with no pass is not in the round, so an idle engine never blocks the
// others. A member that leaves (its pass failed) or misses a deadline is dropped, and the round goes on
// without it.
#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace dualpath::runtime {

// One finished round: when it started, who was in it, and its attention time (the layers' compute time
// each member reported, summed over the round's layers).
struct ep_round_record {
  int64_t start_ns = 0;
  uint32_t members = 0;
  double max_s = 0;   // the largest member's attention time
  double mean_s = 0;  // over the whole group: engines that were not in the round count 0 (they wait too)
  double max_over_avg() const { return mean_s > 0 ? max_s / mean_s : 0; }
};

// What a call decided: engines whose join is answered (their round started), engines whose layer wait is
// answered (the layer may proceed), and engines dropped from the round (their waits fail).
struct ep_actions {
  std::vector<uint32_t> admitted;
  std::vector<uint32_t> released;
  std::vector<uint32_t> dropped;
  bool round_started = false;  // a new round began (its first layer's deadline starts now)
  bool layer_opened = false;   // the round moved on to its next layer (that layer's deadline starts now)
  bool gathering = false;      // a round ended; the next waits for its members (deadline: layer == layers)
};

class ep_rounds {
 public:
  // `group_size` engines of `layers` layers each (every pass of a group computes all layers).
  ep_rounds(uint32_t group_size, uint32_t layers);

  // `engine` has a pass ready whose layers are expected to take `layer_s` each.
  ep_actions join(uint32_t engine, double layer_s, int64_t now_ns);
  // `engine` computed `layer` of its pass in `attention_s`; it may go on when every member did.
  // A report from an engine not in the round (dropped, never joined) or of another layer is dropped.
  ep_actions arrive(uint32_t engine, uint32_t layer, double attention_s, int64_t now_ns);
  // `engine`'s pass ended early (failed, aborted): out of the round, or out of the queue for the next one.
  ep_actions leave(uint32_t engine, int64_t now_ns);
  // `engine` finished its pass and has no next one ready: the next round need not wait for it.
  ep_actions idle(uint32_t engine, int64_t now_ns);
  // The deadline of (`round`, `layer`) passed: members that did not report it are dropped. `layer ==
  // layers` is the gather after round `round`: it starts the next round with whoever joined.
  ep_actions expire(uint64_t round, uint32_t layer, int64_t now_ns);

  uint32_t layers() const { return layers_; }
  bool running() const { return running_; }
  uint64_t round() const { return round_; }  // the current (or last) round's number, from 1
  uint32_t layer() const { return layer_; }  // the layer the current round waits for
  bool in_round(uint32_t engine) const { return members_.count(engine) > 0; }
  bool waiting(uint32_t engine) const { return queue_.count(engine) > 0; }
  // The largest expected layer time of the current round's members (its deadline grows with it).
  double max_layer_s() const { return max_layer_s_; }
  const std::vector<ep_round_record>& records() const { return records_; }
  uint64_t dropped_members() const { return dropped_total_; }

 private:
  struct member {
    double attention_s = 0;
    bool arrived = false;
  };
  ep_actions start_next(int64_t now_ns, ep_actions a);
  ep_actions try_release(int64_t now_ns, ep_actions a);
  void end_round();

  uint32_t group_size_, layers_;
  bool running_ = false;
  uint64_t round_ = 0;
  uint32_t layer_ = 0;
  int64_t round_start_ns_ = 0;
  double max_layer_s_ = 0;
  std::map<uint32_t, member> members_;
  std::map<uint32_t, double> queue_;   // engines waiting for the next round, with their layer time
  std::map<uint32_t, double> done_s_;  // attention time of members dropped mid-round (still count in it)
  std::set<uint32_t> pending_;         // members of the last round not yet back (joined, idle or left)
  std::vector<ep_round_record> records_;
  uint64_t dropped_total_ = 0;
};

}  // namespace dualpath::runtime
