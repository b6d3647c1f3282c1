#pragma once
// The scheduler actor (docs/design.md §3, §7): one per cluster. Owns the global waiting queue, the fresh view
// of every engine and node (reports plus the charges they do not count yet, §7.1), and the active policy,
// which can be swapped while it runs.
// The decisions themselves are plain C++ in schedule/; this actor only feeds them messages.
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actors/vocabulary.hpp"
#include "protocol/interfaces.hpp"
#include "protocol/scheduler_codec.hpp"
#include "core/cluster_config.hpp"
#include "schedule/policy.hpp"

namespace dualpath::actors {

// One entry of `[[schedule.switch]]`: at `at_s` seconds after the scheduler starts, switch to `policy`.
using policy_switch = dualpath::policy_switch;  // [[schedule.switch]] of the cluster file

struct scheduler_options {
  std::string policy = "balanced";
  schedule::policy_params params;       // thresholds and the group layout (params.groups; default one node per group)
  std::vector<policy_switch> switches;  // applied via delayed messages, in at_s order
  // A charge of the fresh view that no report acknowledges is dropped this long after its assignment
  // (docs/design.md §7.1); the cluster sets 4 × timeout_s, by when its request has long failed.
  double charge_expiry_s = 4 * 60.0;
};

// Spawns the scheduler. Throws user_error for an unknown policy name (also inside `switches`).
scheduler_actor spawn_scheduler(caf::actor_system& sys, scheduler_options options);

}  // namespace dualpath::actors
