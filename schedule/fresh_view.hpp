#pragma once
// The scheduler's view of the cluster that is never stale (docs/design.md §7.1). Leaders report measured
// numbers every 2 ms, but an engine learns of a request only when it arrives (a DE at hand-off), so a plain
// report would wipe the charges the policy made when it assigned the request and the next fetch would
// herd onto the same engines. This view keeps every charge the policy made, per request, until a report
// says that its numbers count the request: each report replaces the measured numbers, drops the charges
// it acknowledges and re-applies the others. Plain C++, no clocks: time is always an argument.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "schedule/policy.hpp"

namespace dualpath::schedule {

// A leader's report: its group's numbers as measured, and which requests those numbers already count.
struct group_report {
  node_snapshot node;  // kind, read_q and engines as measured
  // acked[i]: the requests node.engines[i] counts in seq_e/tok_e/free HBM, or counted at some point since
  // the previous report (a request that came and went between two reports is acknowledged too).
  std::vector<std::vector<uint64_t>> acked;
  // The requests whose storage reads the node's read_q counts (or counted since the previous report).
  std::vector<uint64_t> read_acked;
};

class fresh_view {
 public:
  // A charge that no report acknowledges within `expiry_s` seconds of its assignment is dropped (and
  // counted): its request failed or its engine never reported, and it must not weigh on the view forever.
  explicit fresh_view(double expiry_s) : expiry_s_(expiry_s) {}

  // What policies read and charge as they assign.
  cluster_snapshot& snapshot() { return snap_; }
  const cluster_snapshot& snapshot() const { return snap_; }

  // The policy has just charged the snapshot for `out` (at `now_s`): keep each charge until acknowledged.
  void record(const std::vector<assignment>& out, double now_s);
  // A leader's report (at `now_s`): replaces its node's numbers, drops the charges it acknowledges and
  // re-applies every one still pending on that node. A decode engine that counts a request ends all of
  // the request's charges: by hand-off its prefill is over and its reads have landed.
  void report(const group_report& r, double now_s);
  // Drops charges older than the bound; report() and record() call it too.
  void expire(double now_s);
  // Node `node` is lost (docs/design.md §13): its engines leave the snapshot for good (a report still in
  // flight from it is ignored), and every request with a charge on it loses all its charges (it is re-run
  // under a new id). Answers how many requests lost their charges.
  size_t remove_node(uint32_t node);
  // Lost node `node` is back as a new process: its next report brings its engines in again, empty. (A late
  // report of the dead one cannot come after this: its connection closed before the loss was noticed.)
  void restore_node(uint32_t node) { lost_.erase(node); }
  bool lost(uint32_t node) const { return lost_.count(node) > 0; }

  size_t pending() const { return live_; }       // charges not yet acknowledged
  uint64_t expired() const { return expired_; }  // charges dropped unacknowledged, since start

 private:
  static constexpr uint32_t no_engine = UINT32_MAX;
  struct charge {
    uint32_t node = 0;
    uint32_t engine = no_engine;  // no_engine: a read charge on the node's read_q
    uint32_t seq = 0;
    uint64_t tok = 0, hbm = 0, bytes = 0;
  };
  struct pending_request {
    double at_s = 0;
    std::vector<charge> charges;  // at most four: PE, DE, and the reads on each node
  };

  void add(uint64_t id, pending_request p);
  void drop(uint64_t id);

  double expiry_s_;
  cluster_snapshot snap_;
  std::unordered_map<uint64_t, pending_request> pending_;
  // Requests with a charge on the node; may hold ids already gone (cleaned when the node reports).
  std::unordered_map<uint32_t, std::vector<uint64_t>> by_node_;
  std::deque<std::pair<double, uint64_t>> order_;  // (assigned at, id) in assignment order, for expiry
  size_t live_ = 0;
  uint64_t expired_ = 0;
  std::unordered_set<uint32_t> lost_;
};

}  // namespace dualpath::schedule
