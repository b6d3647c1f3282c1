#pragma once
// The scheduler actor (DESIGN §3, §7): one per cluster. Owns the global waiting queue, the latest
// snapshot of every engine and node, and the active policy, which can be swapped while it runs.
// The decisions themselves are plain C++ in schedule/; this actor only feeds them messages.
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actors/type_ids.hpp"
#include "core/cluster_config.hpp"
#include "schedule/policy.hpp"

namespace dualpath::actors {

using scheduler_actor = caf::typed_actor<
    // Client: queue one request (schema::Request) at the tail of the global FIFO; replies with the
    // number of requests now waiting.
    caf::replies_to<atom::submit, envelope<schema::Request>>::with<uint64_t>,
    // Leader: replace the snapshot of its group (engines' seq_e, tok_e, free HBM) and its node's read_q.
    caf::reacts_to<atom::report, envelope<schema::GroupReport>>,
    // PE leader: ask for work for its group's engines; replies with the assignments the active policy
    // makes now (possibly none): PE, DE, read path and, for split, the block ranges.
    caf::replies_to<atom::fetch, envelope<schema::Fetch>>::with<envelope<schema::Assignments>>,
    // Control: switch the active policy for requests not yet assigned. An unknown name is refused
    // (ok = false, the running policy stays) with the list of known names.
    caf::replies_to<atom::policy, atom::set, std::string>::with<envelope<schema::PolicyStatus>>,
    // Control: the active policy and the known names.
    caf::replies_to<atom::policy, atom::get>::with<envelope<schema::PolicyStatus>>,
    // Control: queue length and counters.
    caf::replies_to<atom::stats>::with<envelope<schema::SchedulerStats>>,
    // Internal: the scripted switch with this index is due (sent to itself with delayed_send).
    caf::reacts_to<atom::scripted, uint32_t>>;

// One entry of `[[schedule.switch]]`: at `at_s` seconds after the scheduler starts, switch to `policy`.
using policy_switch = dualpath::policy_switch;  // [[schedule.switch]] of the cluster file

struct scheduler_options {
  std::string policy = "dualpath";
  schedule::policy_params params;
  std::vector<policy_switch> switches;  // applied via delayed messages, in at_s order
};

// Spawns the scheduler. Throws user_error for an unknown policy name (also inside `switches`).
scheduler_actor spawn_scheduler(caf::actor_system& sys, scheduler_options options);

// Conversions between the schedule/ types and their Cap'n Proto envelopes (used by leaders, clients,
// tests and the control CLI).
envelope<schema::Request> encode(const schedule::request_info& r);
schedule::request_info decode(const envelope<schema::Request>& e);
envelope<schema::GroupReport> encode_report(schedule::role kind, const schedule::node_snapshot& node);
envelope<schema::Fetch> encode_fetch(uint32_t node);
std::vector<schedule::assignment> decode(const envelope<schema::Assignments>& e);

struct policy_status {
  bool ok = false;
  std::string active;
  std::vector<std::string> known;
  std::string message;
};
policy_status decode(const envelope<schema::PolicyStatus>& e);

struct scheduler_counters {
  std::string policy;
  uint64_t waiting = 0, submitted = 0, assigned = 0, fetches = 0;
  uint32_t switches = 0, prefill_engines = 0, decode_engines = 0;
  uint64_t assigned_pe = 0, assigned_de = 0, assigned_split = 0;
};
scheduler_counters decode(const envelope<schema::SchedulerStats>& e);

}  // namespace dualpath::actors
