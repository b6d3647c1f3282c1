#pragma once
// The scheduler's control port: a small actor that forwards `policy set|get` and `stats` to the
// scheduler. cluster/control_client.hpp publishes it with CAF's middleman so `dualpath ctl` can switch
// policies in a running cluster; only this narrow interface is reachable from the port.
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "actors/vocabulary.hpp"
#include "actors/scheduler.hpp"
#include "protocol/waits.hpp"
#include "core/secret.hpp"

namespace dualpath::actors {

// Who may command the port (docs/design.md §13): the expected proof of the cluster's secret, and where a
// refused command is counted (shared with the run's report).
struct control_gate {
  std::string proof;  // secret_proof(secret, secret_purpose::control)
  std::shared_ptr<refused_peers> refused = std::make_shared<refused_peers>();
  caf::timespan scheduler_wait = waits{}.request();  // the run's waits_of(config).request()
};

// Spawns the control actor for `scheduler`; it exits together with the scheduler.
control_actor spawn_control(caf::actor_system& sys, const scheduler_actor& scheduler, control_gate gate);

}  // namespace dualpath::actors
