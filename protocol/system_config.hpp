#pragma once
// The actor-system configuration of every DualPath process: the middleman (remote actors), the project's
// message types, CAF's own logger silenced (DualPath logs through spdlog), and one scheduler worker per core.
#include <algorithm>
#include <chrono>
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
    // An idle worker blocks after its 100 quick polls instead of sleeping 50 us 500 times first: every leader
    // ticks every 2 ms, so with CAF's default some worker never left that phase and an idle server used a
    // quarter of a core. A blocked worker still wakes every millisecond to steal a job queued behind a busy
    // one (CAF: every 10 ms). Idle server 6% of a core instead of 25%, a storage-bound run half the CPU, the
    // same JCTs (docs/design.md §13).
    set("work-stealing.moderate-poll-attempts", size_t(0));
    set("work-stealing.relaxed-sleep-duration", caf::timespan{std::chrono::milliseconds(1)});
  }
};

}  // namespace dualpath::protocol
