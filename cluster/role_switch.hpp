#pragma once
// Adaptive P/D in the runtime (docs/design.md §7.9). Every planner window the launcher measures the two roles'
// loads (schedule::role_load) and the same rule and gating as the simulator's (schedule::role_driver) decide a
// move. A moving node leaves the scheduler's view (`drain`: no new work), finishes the turns placed on it and
// everything its engines hold, and then changes role in place (cluster/node_role.hpp): in this process when the
// nodes are embedded, in its own node process otherwise, the launcher telling every other process. Then the
// scheduler takes it back (`rejoin`). Its data plane (buffer, SNIC, fabric endpoints) stays as it is.
#include <caf/fwd.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "cluster/node_host.hpp"
#include "core/status.hpp"
#include "cluster/vocabulary.hpp"
#include "protocol/scheduler_codec.hpp"
#include "report/run_report.hpp"
#include "schedule/role_planner.hpp"

namespace dualpath::cluster {

class node_processes;

// Where the nodes that move live: all in this process (embedded), or each in its node process (§13).
class role_hosts {
 public:
  virtual ~role_hosts() = default;
  // Engine-time every prefill engine has spent in passes since the run began.
  virtual uint64_t prefill_busy_ns() = 0;
  // Whether drained node `node` holds nothing now.
  virtual bool holds_nothing(caf::scoped_actor& self, uint32_t node) = 0;
  // Switches drained node `node`; once it returns ok, every process's view names its new actors in its role.
  virtual status switch_role(uint32_t node, bool to_prefill) = 0;
};

// The embedded run's: every node's data plane (`ios`) and actors (`nodes`, replaced on a switch; what is
// spawned is added to `all`, stopped at the end) are in this process.
std::unique_ptr<role_hosts> embedded_role_hosts(caf::actor_system& sys, const run_base& base, cluster_view_ptr view,
                                                std::vector<std::unique_ptr<runtime::node_io>>& ios,
                                                std::vector<node_actors>& nodes, std::vector<caf::actor>& all);
// A multi-process run's: each node switches in its own process; this launcher's view follows the roles.
std::unique_ptr<role_hosts> process_role_hosts(node_processes& nodes, cluster_view_ptr view);

struct role_switch_parts {
  cluster_view_ptr view;
  std::unique_ptr<role_hosts> hosts;
  double prefill_tokens_per_s = 0;  // one prefill engine's rate at β (a backlog in seconds)
};

class role_switcher {
 public:
  explicit role_switcher(role_switch_parts parts);

  // The run's clock starts (the collector's t0): moves are stamped in seconds since then.
  void begin(int64_t t0_ns);
  // The launcher's loop, every 200 ms or so: moves a draining node on once it holds nothing, and closes a
  // planner window when one is due. `records` are the turns answered so far.
  void tick(caf::scoped_actor& self, const std::vector<report::turn_record>& records);
  // Turn `request` was answered (or failed for good): a draining node no longer waits for it.
  void on_result(uint64_t request);

  // The moves that completed, in order.
  const std::vector<schedule::role_switch>& switches() const { return switches_; }
  uint32_t prefill_nodes() const;

 private:
  struct drain {
    schedule::role_switch move;
    int64_t since = 0;           // ns, when it left the view
    std::set<uint64_t> pending;  // turns placed to decode on it when it left, not answered yet
    bool quiet = false;          // nothing held at the last check (two in a row move it on)
  };

  schedule::role_load window_load(const scheduler_counters& stats, const std::vector<report::turn_record>& records,
                                  double now_s);
  void plan(caf::scoped_actor& self, const std::vector<report::turn_record>& records);
  void start_drain(caf::scoped_actor& self, uint32_t node, bool to_prefill, const std::string& why);
  bool switch_role(drain& d);
  void give_back(caf::scoped_actor& self, uint32_t node);
  double seconds(int64_t ns) const { return double(ns - t0_) / 1e9; }

  role_switch_parts p_;
  int64_t t0_ = 0;
  schedule::role_driver driver_;
  double window_start_s_ = 0;
  uint64_t busy_at_window_ = 0;   // progress::prefill_busy_ns() when the window began
  size_t records_at_window_ = 0;  // records.size() when the window began
  std::vector<drain> draining_;
  // The turns answered lately, which a drain's list from the scheduler may still name.
  static constexpr size_t max_answered = 65536;
  std::unordered_set<uint64_t> answered_;
  std::deque<uint64_t> answered_order_;
  std::vector<schedule::role_switch> switches_;
};

}  // namespace dualpath::cluster
