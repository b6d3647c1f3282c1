#pragma once
// The expert-parallel lockstep of one PE group (docs/design.md §7.6, `[cluster] ep_sync`).
#include <caf/fwd.hpp>

#include <memory>

#include "actors/vocabulary.hpp"
#include "protocol/interfaces.hpp"
#include "runtime/ep_rounds.hpp"

namespace dualpath::actors {

// `rounds` is made for the group's size and the model's layers; it is shared so that the launcher reads the
// finished rounds once the actor system has stopped. `timeout_s` is the run's timeout (its deadlines).
ep_group_actor spawn_ep_group(caf::actor_system& sys, std::shared_ptr<runtime::ep_rounds> rounds, double timeout_s);

}  // namespace dualpath::actors
