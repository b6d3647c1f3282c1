#pragma once
// The scheduler actor (docs/design.md §3, §7): one per cluster. Owns the global waiting queue, the latest
// snapshot of every engine and node, and the active policy, which can be swapped while it runs.
// The decisions themselves are plain C++ in schedule/; this actor only feeds them messages.
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/interfaces.hpp"
#include "protocol/scheduler_codec.hpp"
#include "core/cluster_config.hpp"
#include "schedule/policy.hpp"

namespace dualpath::actors {

// One entry of `[[schedule.switch]]`: at `at_s` seconds after the scheduler starts, switch to `policy`.
using policy_switch = dualpath::policy_switch;  // [[schedule.switch]] of the cluster file

struct scheduler_options {
  std::string policy = "dualpath";
  schedule::policy_params params;
  std::vector<policy_switch> switches;  // applied via delayed messages, in at_s order
};

// Spawns the scheduler. Throws user_error for an unknown policy name (also inside `switches`).
scheduler_actor spawn_scheduler(caf::actor_system& sys, scheduler_options options);

}  // namespace dualpath::actors
