#pragma once
// The scheduler's control port on the network (docs/design.md §7.5): publishing the control actor, and
// the client side `dualpath ctl` uses.
#include <caf/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "cluster/vocabulary.hpp"
#include "actors/control.hpp"
#include "protocol/interfaces.hpp"
#include "protocol/scheduler_codec.hpp"

namespace dualpath::cluster {

// Spawns the control actor and publishes it on host:port (port 0: any free port; 127.0.0.1 unless told
// otherwise, docs/design.md §13). Only commands with `gate`'s proof are obeyed. Returns the bound port.
// The system must have loaded caf::io::middleman. Throws user_error when the port cannot be bound.
uint16_t publish_control(caf::actor_system& sys, const scheduler_actor& scheduler, uint16_t port,
                         const std::string& host, control_gate gate);

// The client side used by `dualpath ctl`, proving `secret` with every command. Every step has a deadline:
// nothing listening, a peer that is not a scheduler control port, or no answer in time all end in
// user_error naming host:port; so does a wrong secret.
class control_client {
 public:
  control_client(caf::actor_system& sys, const std::string& host, uint16_t port, const std::string& secret,
                 std::chrono::milliseconds timeout = std::chrono::seconds(3));
  ~control_client();
  control_client(const control_client&) = delete;
  control_client& operator=(const control_client&) = delete;

  policy_status set_policy(const std::string& name);
  policy_status get_policy();
  scheduler_counters stats();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// Parses "HOST:PORT"; throws user_error naming `what` on bad input. Port 0 ("any free port") only where
// `allow_any` (an address to listen on).
std::pair<std::string, uint16_t> parse_host_port(const std::string& text, const std::string& what,
                                                 bool allow_any = false);

}  // namespace dualpath::cluster
