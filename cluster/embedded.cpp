#include "cluster/embedded.hpp"

#include <caf/all.hpp>

#include "actors/engines.hpp"

namespace dualpath::cluster {

// The embedded cluster's node data planes, connected to each other. They are built before the actor system
// because they must outlive every actor that points at them.
std::vector<std::unique_ptr<runtime::node_io>> embedded_data_planes(const run_base& base, const cluster_config& c,
                                                                    const run_mode& mode) {
  std::vector<std::unique_ptr<runtime::node_io>> ios;
  // The oracle's hit KV, in DRAM and shared: a block one node persists is what another node loads.
  auto dram = mode.bypass() ? std::make_shared<runtime::dram_blocks>() : nullptr;
  // The nodes emulate separate hosts but share this process's cores: their provider calls go one at a
  // time (docs/design.md §13), so that no node spins on a lock another node's preempted thread holds.
  auto provider_lock = transport::make_process_call_lock();
  for (uint32_t n = 0; n < c.total_nodes(); ++n)
    ios.push_back(make_node_io(c, base.geometry, n, mode.bypass(), *base.store, dram, provider_lock,
                               transport::host_memory::private_pages));
  runtime::fabric_directory directory(c.total_nodes() * c.engines_per_node);
  for (auto& io : ios)
    for (auto& e : io->entries()) directory[e.engine] = e;
  for (auto& io : ios) io->connect(directory);
  return ios;
}

// Spawns every node's actors in this process; returns them (to stop at the end).
// `ep` gets each prefill node's EP rounds under ep_sync (read once the actor system has stopped).
// Every actor spawned is added to `all` at once, so that a throw half-way still leaves it to be stopped.
void spawn_embedded_nodes(caf::actor_system& sys, const run_base& base, const cluster_view_ptr& view,
                          std::vector<std::unique_ptr<runtime::node_io>>& ios,
                          std::vector<std::shared_ptr<runtime::ep_rounds>>& ep, std::vector<caf::actor>& all,
                          std::vector<node_actors>* kept) {
  const auto& c = view->config;
  for (uint32_t n = 0; n < c.total_nodes(); ++n) {
    node_actors na = spawn_node_actors(sys, base, view, *ios[n], n, n == 0 ? base.first : nullptr);
    view->traffic_queues[n] = na.traffic_queue;
    view->leaders[n] = na.leader;
    if (na.ep_rounds) ep.push_back(na.ep_rounds);
    for (size_t i = 0; i < na.engines.size(); ++i)
      view->set_engine(uint32_t(n * c.engines_per_node + i), na.engines[i]);
    all.insert(all.end(), na.all.begin(), na.all.end());
    if (kept) kept->push_back(std::move(na));
  }
  for (auto& l : view->leaders) caf::anon_send(l, atom::tick_v);
}

}  // namespace dualpath::cluster
