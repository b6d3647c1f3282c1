#pragma once
// Direct middleman connections between node processes (docs/design.md §13). A node process learns its peers'
// actor handles from the launcher's registry, so CAF routes every message between two nodes through the
// launcher's process: two trips each way, and the launcher's one I/O thread relays every hand-off, copy
// request and report of the cluster. Each node therefore opens a port of its own (`open_link`) and names it
// in its node_handles; a node dials the peers of lower index once it is wired, before it says ready, and a
// peer of higher index dials a node that rejoins before it answers the launcher's `rejoin`. CAF then prefers
// the direct route for every message between the two. A dial that fails leaves the route through the
// launcher, which still works.
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <set>
#include <string>

#include "core/status.hpp"
#include "protocol/handles.hpp"

namespace dualpath::cluster {

// The local address this host uses toward `host` (the registry's): where peers that reach the registry
// can reach this process too. Loopback for a registry on this host. No packet is sent.
result<std::string> local_address_toward(const std::string& host, uint16_t port);

// Opens a middleman port on `host` (any free port) for peers' direct connections; its number.
result<uint16_t> open_link(caf::actor_system& sys, const std::string& host);

// The status of a dial that CAF refused or that timed out, naming the peer.
status dial_failed(const protocol::node_handles& peer, const caf::error& e);

// The longest a dial waits, whatever its caller's budget: a live peer answers a connect on its host's network
// within milliseconds, and a node's start-up or the launcher's `rejoin` must not wait on one that does not.
inline constexpr std::chrono::milliseconds dial_timeout{2000};
inline std::chrono::milliseconds dial_wait(std::chrono::milliseconds budget) { return std::min(budget, dial_timeout); }

// Whether this node (index `self_node`) dials `peer` at wiring: peers of lower index that named a link.
bool dials_at_wiring(uint32_t self_node, const protocol::node_handles& peer);

// Connects this process's middleman to `peer`'s link, waiting at most dial_wait(budget) (a thread outside actors).
status dial(caf::actor_system& sys, const protocol::node_handles& peer, std::chrono::milliseconds budget);

// The same from inside an actor, without blocking it: `done(status)` runs in `self`'s context.
template <class Self, class Done>
void dial_then(Self* self, const protocol::node_handles& peer, std::chrono::milliseconds budget, Done done) {
  self->request(self->system().middleman().actor_handle(), dial_wait(budget), caf::connect_atom::value, peer.link_host,
                peer.link_port)
      .then([done](const caf::node_id&, const caf::strong_actor_ptr&,
                   const std::set<std::string>&) mutable { done(status::success()); },
            [done, peer](caf::error& e) mutable { done(dial_failed(peer, e)); });
}

}  // namespace dualpath::cluster
