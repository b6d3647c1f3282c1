// A node changing role in its own process (cluster/node_role.hpp, docs/design.md §7.9).
#include "cluster/node_role.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/engines.hpp"
#include "protocol/waits.hpp"

namespace dualpath::cluster {

bool node_holds_nothing(caf::scoped_actor& self, const cluster_view& view, runtime::node_io& io, uint32_t node,
                        const moved_engines& moved) {
  std::optional<uint32_t> held;
  self->request(view.leader(node), std::chrono::milliseconds(500), atom::held_v)
      .receive([&](uint32_t n) { held = n; }, [](caf::error&) {});
  if (!held || *held > 0) return false;
  const uint32_t per_node = view.config.engines_per_node;
  for (uint32_t e = node * per_node; e < (node + 1) * per_node; ++e) {
    // A decode engine's all-to-all buffer, or the front a prefill engine keeps for peers that last knew it as
    // a decode node.
    const bool fixed = view.is_prefill_node(node) ? moved.reserved.count(e) > 0 : view.model_traffic_bytes() > 0;
    if (io.hbm(e).allocations() > (fixed ? 1u : 0u)) return false;
  }
  return true;
}

void switch_node_role(caf::actor_system& sys, const run_base& base, const cluster_view_ptr& view, runtime::node_io& io,
                      uint32_t node, bool to_prefill, node_actors& actors, std::vector<caf::actor>& all,
                      moved_engines& moved) {
  const auto& c = view->config;
  // Peers stop naming the node as a decode all-to-all peer; then its actors stop, and only once every one
  // of them is down (a compute worker may still be inside a kernel) is its HBM laid out again.
  view->set_role(node, actors::node_role::switching);
  std::vector<caf::actor> stopping = actors.engines;
  stopping.insert(stopping.end(), actors.workers.begin(), actors.workers.end());
  stopping.push_back(caf::actor_cast<caf::actor>(actors.leader));
  caf::scoped_actor waiter{sys};
  for (auto& a : stopping) {
    waiter->monitor(a);
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
  size_t down = 0;
  bool late = false;
  while (down < stopping.size() && !late)
    waiter->receive([&](const caf::down_msg&) { ++down; }, caf::after(waits_of(c).request()) >> [&] { late = true; });
  if (late)
    spdlog::warn("node {}: {} of its actors did not stop within {:g} s", node, stopping.size() - down, c.timeout_s);
  for (uint32_t i = 0; i < c.engines_per_node; ++i) {
    const uint32_t e = node * c.engines_per_node + i;
    // A decode engine takes its all-to-all buffer at offset 0 itself; a prefill engine keeps that front
    // unused, since a decode peer's write planned before the switch may still land there.
    const uint64_t front = to_prefill ? view->model_traffic_bytes() : 0;
    io.relayout_hbm(e, uint64_t((to_prefill ? c.prefill_hbm() : c.hbm_gb) * 1e9), front);
    if (front) moved.reserved.insert(e);
    else moved.reserved.erase(e);
  }
  view->set_role(node, serving_role(to_prefill));
  node_actors fresh;
  fresh.traffic_queue = actors.traffic_queue;
  spawn_node_engines(sys, base, view, io, node, fresh, actors.backends);
  all.insert(all.end(), fresh.all.begin(), fresh.all.end());
  view->set_node(handles_of(node, fresh));
  caf::anon_send(fresh.leader, atom::tick_v);
  actors = std::move(fresh);
}

node_handles handles_of(uint32_t node, const node_actors& actors) {
  node_handles h;
  h.node = node;
  h.traffic_queue = caf::actor_cast<caf::actor>(actors.traffic_queue);
  h.leader = caf::actor_cast<caf::actor>(actors.leader);
  h.engines = actors.engines;
  return h;
}

}  // namespace dualpath::cluster
