#pragma once
// Actor handles that a multi-process run exchanges at start-up (cluster/node_processes.hpp). They travel as
// untyped handles (CAF's own serializable type); receivers cast them back to the typed interfaces.
#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dualpath::protocol {

// What one node process hosts.
struct node_handles {
  uint32_t node = 0;
  caf::actor traffic_queue;
  caf::actor leader;
  caf::actor control;               // node_control_actor: stats and stop
  std::vector<caf::actor> engines;  // in global engine order
  // Where the node's middleman takes its peers' direct connections (port 0: nowhere; its messages then
  // travel through the launcher's process). docs/design.md §13, cluster/peer_links.hpp.
  std::string link_host;
  uint16_t link_port = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_handles& x) {
  return f(caf::meta::type_name("node_handles"), x.node, x.traffic_queue, x.leader, x.control, x.engines, x.link_host,
           x.link_port);
}

// Everything a node needs to reach the rest of the cluster.
struct cluster_handles {
  caf::actor scheduler;
  std::vector<caf::actor> clients;  // per agent
  std::vector<node_handles> nodes;  // per node
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_handles& x) {
  return f(caf::meta::type_name("cluster_handles"), x.scheduler, x.clients, x.nodes);
}

}  // namespace dualpath::protocol
