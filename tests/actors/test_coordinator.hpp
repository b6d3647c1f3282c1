#pragma once
// The actor system of the actor tests: CAF's test coordinator (deterministic message order, a virtual
// clock), quiet logs and the project's message types.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include "protocol/type_ids.hpp"

namespace dualpath::test {

inline caf::actor_system_config& test_coordinator_config(caf::actor_system_config& cfg) {
  cfg.set("scheduler.policy", caf::atom("testing"));
  cfg.set("logger.file-verbosity", caf::atom("quiet"));
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  cfg.add_message_types<caf::id_block::dualpath>();
  return cfg;
}

}  // namespace dualpath::test
