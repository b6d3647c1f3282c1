#pragma once
// What every process of a run builds the same way from the cluster file: the model's backend and KV
// geometry, the shared block store, the cluster view, and one node's data plane and actors. The embedded
// cluster builds every node in one process; a node process (docs/design.md §13) builds only its own.
#include <caf/fwd.hpp>

#include <memory>
#include <string>
#include <vector>

#include "cluster/vocabulary.hpp"
#include "actors/cluster_view.hpp"
#include "runtime/ep_rounds.hpp"
#include "runtime/node_io.hpp"
#include "core/cluster_config.hpp"
#include "gpu/backend.hpp"

namespace dualpath::cluster {

struct run_base {
  gpu::backend_options backend_options;
  std::shared_ptr<gpu::compute_backend> first;  // the first engine's backend (also gives the compute fit)
  model_spec spec;
  kv_geometry geometry;
  std::unique_ptr<storage::block_store> store;
};

// Validates `c` (user_error naming `origin`; `planner.adaptive` is refused unless `adaptive_ok`: only `run`
// and its node processes move nodes between roles), makes the first backend and opens the store.
run_base prepare_run(const cluster_config& c, const std::string& origin, bool adaptive_ok = false);

// The view every actor of this process reads; actor handles are filled in by the caller. `node_processes`:
// the run's nodes are processes of their own (`hardware.de_fetch = "auto"` resolves to pull there, and a
// client holds a failed turn for the node-loss grace).
cluster_view_ptr make_view(const run_base& base, const cluster_config& c, const run_mode& mode, bool node_processes);

// Node `node`'s data plane (bypass: the oracle's in-process I/O, its hit KV from `dram`, shared by the nodes).
// `provider_lock`: shared by the nodes of one process (transport::fabric_options::provider_lock). `buffers`:
// shared_file for a node process, whose peers on the host copy into its buffers (transport::local_copy).
std::unique_ptr<runtime::node_io> make_node_io(const cluster_config& c, const kv_geometry& geo, uint32_t node,
                                               bool bypass, storage::block_store& store,
                                               std::shared_ptr<runtime::dram_blocks> dram,
                                               std::shared_ptr<transport::call_lock> provider_lock,
                                               transport::host_memory buffers);

struct node_actors {
  traffic_queue_actor traffic_queue;
  leader_actor leader;
  std::vector<caf::actor> engines;  // this node's, in global engine order (cluster_view::set_engine types them)
  std::vector<caf::actor> workers;  // the engines' compute workers, in the same order
  std::vector<std::shared_ptr<gpu::compute_backend>> backends;  // the engines' backends, in the same order
  std::vector<caf::actor> all;                                  // everything spawned, to stop at the end
  std::shared_ptr<runtime::ep_rounds> ep_rounds;  // `ep_sync`, prefill node: its group's rounds (else null)
};

// Spawns node `node`'s traffic queue, compute workers, engines and leader over `io`. Engine backends are
// made from base.backend_options; `first_backend` (if set) serves the node's first engine.
node_actors spawn_node_actors(caf::actor_system& sys, const run_base& base, const cluster_view_ptr& view,
                              runtime::node_io& io, uint32_t node,
                              const std::shared_ptr<gpu::compute_backend>& first_backend = nullptr);

// The node's compute workers, engines (in the role the view gives the node now) and leader, added to `out`
// (whose traffic queue is kept). `backends` (one per engine, if given) are reused: a node that changes role
// (docs/design.md §7.9) keeps its model.
void spawn_node_engines(caf::actor_system& sys, const run_base& base, const cluster_view_ptr& view,
                        runtime::node_io& io, uint32_t node, node_actors& out,
                        std::vector<std::shared_ptr<gpu::compute_backend>> backends = {});

}  // namespace dualpath::cluster
