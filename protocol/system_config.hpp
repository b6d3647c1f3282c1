#pragma once
// The actor-system configuration of every DualPath process: the middleman (remote actors), the project's
// message types, and CAF's own logger silenced (DualPath logs through spdlog).
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>

#include "protocol/type_ids.hpp"

namespace dualpath::protocol {

struct system_config : caf::actor_system_config {
  system_config() {
    load<caf::io::middleman>();
    add_message_types<caf::id_block::dualpath>();
    set("logger.console-verbosity", caf::atom("quiet"));
    set("logger.file-verbosity", caf::atom("quiet"));
  }
};

}  // namespace dualpath::protocol
