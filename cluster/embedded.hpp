#pragma once
// The embedded cluster's parts (docs/design.md §13): every node's data plane and actors in this one process.
// Shared by `run` (cluster/cluster.cpp) and `serve` (serve/).
#include <caf/fwd.hpp>

#include <functional>
#include <memory>
#include <vector>

#include "cluster/node_host.hpp"
#include "cluster/vocabulary.hpp"
#include "runtime/node_io.hpp"

namespace dualpath::cluster {

// Runs `f` when the scope ends, however it ends.
struct on_exit {
  std::function<void()> f;
  ~on_exit() { f(); }
};

// The embedded cluster's node data planes, connected to each other. They are built before the actor system
// because they must outlive every actor that points at them.
std::vector<std::unique_ptr<runtime::node_io>> embedded_data_planes(const run_base& base, const cluster_config& c,
                                                                    const run_mode& mode);

// Spawns every node's actors in this process and files their handles in `view`. `ep` gets each prefill node's
// EP rounds under ep_sync (read once the actor system has stopped). Every actor spawned is added to `all` at
// once, so that a throw half-way still leaves it to be stopped.
void spawn_embedded_nodes(caf::actor_system& sys, const run_base& base, const cluster_view_ptr& view,
                          std::vector<std::unique_ptr<runtime::node_io>>& ios,
                          std::vector<std::shared_ptr<runtime::ep_rounds>>& ep, std::vector<caf::actor>& all,
                          std::vector<node_actors>* kept = nullptr);

}  // namespace dualpath::cluster
