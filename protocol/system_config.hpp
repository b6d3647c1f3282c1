#pragma once
// The actor-system configuration of every DualPath process: the middleman (remote actors), the project's
// message types, CAF's own logger silenced (DualPath logs through spdlog), and one scheduler worker per core.
#include <algorithm>
#include <cstdint>
#include <thread>

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
    // One worker per core. CAF's default is at least four: on a smaller host the extra workers only poll (a
    // 50-us sleep 500 times over before they block), and node processes sharing a host poll each other's
    // cores. On 2 cores, the 64K ablation with --processes used 20% less CPU and ran 7% faster with two
    // (docs/design.md §13).
    set("scheduler.max-threads", int64_t(std::max(1u, std::thread::hardware_concurrency())));
  }
};

}  // namespace dualpath::protocol
