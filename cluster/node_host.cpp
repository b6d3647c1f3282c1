#include "cluster/node_host.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>

#include <algorithm>

#include "actors/engines.hpp"
#include "actors/ep_group.hpp"
#include "actors/leader.hpp"
#include "actors/node_actors.hpp"
#include "core/status.hpp"
#include "storage/block_store.hpp"

namespace dualpath::cluster {

run_base prepare_run(const cluster_config& c, const std::string& origin, bool adaptive_ok) {
  validate_cluster_config(c, origin);
  // Only `dualpath run` moves nodes between roles (docs/design.md §7.9): a server asked for adaptive P/D is
  // refused here, where it starts, rather than silently run static.
  if (c.adaptive && !adaptive_ok)
    throw user_error(origin +
                     ": key 'planner.adaptive': only `dualpath run` moves nodes between roles (docs/design.md "
                     "§7.9); simulate it with `dualpath sim --adaptive`");
  run_base b;
  b.backend_options.kind = c.backend;
  b.backend_options.model = c.model;
  b.backend_options.gpu_profile = c.gpu;
  b.backend_options.mfu = c.mfu;
  b.backend_options.seed = c.seed;
  b.first = gpu::make_backend(b.backend_options);
  b.spec = b.first->model();

  b.geometry = kv_geometry_of(b.spec, c);
  for (auto [key, gb] : {std::pair<const char*, double>{"hbm_gb", c.hbm_gb}, {"prefill_hbm_gb", c.prefill_hbm()}}) {
    const uint64_t hbm_bytes = uint64_t(gb * 1e9);
    if (hbm_bytes < 2 * b.geometry.block_bytes() + uint64_t(c.model_traffic_kb) * 1024)
      throw user_error(fmt::format("{}: key 'hardware.{}': {} bytes cannot hold two Full Blocks of {} ({} bytes)",
                                   origin, key, hbm_bytes, b.spec.name, b.geometry.block_bytes()));
  }

  storage::store_options so;
  so.dir = c.store_dir;
  so.format = storage::block_format::of(b.geometry, model_fingerprint(b.spec.name, c.backend, c.seed, b.geometry));
  so.capacity_bytes = uint64_t(c.capacity_gb * 1e9);
  so.fsync = c.fsync;
  b.store = storage::block_store::open(so);
  return b;
}

cluster_view_ptr make_view(const run_base& base, const cluster_config& c, const run_mode& mode, bool node_processes) {
  auto view = std::make_shared<cluster_view>();
  view->geometry = base.geometry;
  view->slots = {base.store->read_buffer_bytes(), base.store->payload_offset()};
  view->config = c;
  // What node processes receive is this view's config, so theirs is resolved already (docs/design.md §4).
  view->config.de_fetch = resolve_de_fetch(c.de_fetch, node_processes);
  // A failed turn may be the first sign of a lost node process: its client holds it past the launcher's
  // detection (§13). 6 s: three heartbeat deadlines, so a loss seen late on a loaded machine is heard in time.
  if (node_processes) view->node_loss_grace_s = 6.0;
  view->vocab = base.spec.vocab ? base.spec.vocab : 32000;
  view->mode = mode;
  view->stored_prefix = [store = base.store.get()](const std::vector<block_key>& chain) {
    return store->lookup(chain);
  };
  const uint32_t engines_total = c.total_nodes() * c.engines_per_node;
  view->prefill_engines.resize(engines_total);
  view->decode_engines.resize(engines_total);
  view->leaders.resize(c.total_nodes());
  view->traffic_queues.resize(c.total_nodes());
  return view;
}

std::unique_ptr<runtime::node_io> make_node_io(const cluster_config& c, const kv_geometry& geo, uint32_t node,
                                               bool bypass, storage::block_store& store,
                                               std::shared_ptr<runtime::dram_blocks> dram,
                                               std::shared_ptr<transport::call_lock> provider_lock,
                                               transport::host_memory buffers) {
  runtime::node_io_options no;
  no.node = node;
  for (uint32_t i = 0; i < c.engines_per_node; ++i) no.engines.push_back(node * c.engines_per_node + i);
  no.geometry = geo;
  no.buffer_bytes = uint64_t(c.dram_buffer_gb * 1e9);
  no.hbm_bytes = uint64_t((node < c.prefill_nodes ? c.prefill_hbm() : c.hbm_gb) * 1e9);
  // A node that may change role registers room for either role's HBM (docs/design.md §7.9).
  if (c.adaptive) no.hbm_region_bytes = uint64_t(std::max(c.prefill_hbm(), c.hbm_gb) * 1e9);
  no.snic_gb_per_s = c.snic_gb_per_s;
  no.fabric.provider = c.provider;
  no.fabric.rate_gb_per_s = c.cnic_gb_per_s;
  no.fabric.isolation = c.isolation;
  no.fabric.kv_share = c.kv_share;
  no.fabric.timeout = std::chrono::milliseconds(int64_t(c.timeout_s * 1000));
  no.fabric.provider_lock = std::move(provider_lock);
  no.fabric.buffers = buffers;
  no.timeout = no.fabric.timeout;
  no.bypass = bypass;
  no.write_queue_bytes = uint64_t(c.write_queue_gb * 1e9);
  no.dram = std::move(dram);
  return std::make_unique<runtime::node_io>(no, store);
}

node_actors spawn_node_actors(caf::actor_system& sys, const run_base& base, const cluster_view_ptr& view,
                              runtime::node_io& io, uint32_t node,
                              const std::shared_ptr<gpu::compute_backend>& first_backend) {
  node_actors out;
  out.traffic_queue = spawn_traffic_queue(sys, io);
  out.all.push_back(caf::actor_cast<caf::actor>(out.traffic_queue));
  std::vector<std::shared_ptr<gpu::compute_backend>> backends;
  if (first_backend) backends.push_back(first_backend);
  spawn_node_engines(sys, base, view, io, node, out, std::move(backends));
  return out;
}

void spawn_node_engines(caf::actor_system& sys, const run_base& base, const cluster_view_ptr& view,
                        runtime::node_io& io, uint32_t node, node_actors& out,
                        std::vector<std::shared_ptr<gpu::compute_backend>> backends) {
  out.engines.clear();
  out.workers.clear();
  out.backends.clear();
  const uint32_t per_node = view->config.engines_per_node;
  // docs/design.md §7.6: under ep_sync a PE group (today: one node's engines) runs in lockstep.
  ep_group_actor ep;
  if (view->config.ep_sync && view->is_prefill_node(node)) {
    out.ep_rounds = std::make_shared<runtime::ep_rounds>(per_node, view->geometry.layers);
    ep = spawn_ep_group(sys, out.ep_rounds, view->config.timeout_s);
    out.all.push_back(caf::actor_cast<caf::actor>(ep));
  }
  for (uint32_t i = 0; i < per_node; ++i) {
    engine_setup es;
    es.engine = node * per_node + i;
    es.view = view;
    es.node = &io;
    es.ep_group = ep;
    es.backend = i < backends.size() && backends[i]
                     ? backends[i]
                     : std::shared_ptr<gpu::compute_backend>(gpu::make_backend(base.backend_options));
    out.backends.push_back(es.backend);
    es.worker = spawn_compute_worker(sys, es.backend);
    out.workers.push_back(caf::actor_cast<caf::actor>(es.worker));
    out.all.push_back(out.workers.back());
    out.engines.push_back(view->is_prefill_node(node) ? caf::actor_cast<caf::actor>(spawn_prefill_engine(sys, es))
                                                      : caf::actor_cast<caf::actor>(spawn_decode_engine(sys, es)));
    out.all.push_back(out.engines.back());
  }
  out.leader = spawn_leader(sys, view, node, &io);
  out.all.push_back(caf::actor_cast<caf::actor>(out.leader));
}

}  // namespace dualpath::cluster
