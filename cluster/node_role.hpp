#pragma once
// One node changing role in the process that hosts it (docs/design.md §7.9): the embedded launcher does this
// for any node, a node process for its own when the launcher asks. What a moving node must hold nothing of,
// and the switch itself: its engines, compute workers and leader stop, its HBM arenas are laid out for the new
// role, new ones start (reusing the engines' backends) and this process's view files them under that role.
#include <caf/fwd.hpp>

#include <cstdint>
#include <set>
#include <vector>

#include "cluster/node_host.hpp"

namespace dualpath::cluster {

// What a process keeps of the nodes it moved: prefill engines whose arena keeps its front unused, since a
// decode peer's all-to-all write planned before the switch may still land there.
struct moved_engines {
  std::set<uint32_t> reserved;
};

// The role a node serves in: prefill or decode.
inline actors::node_role serving_role(bool prefill) {
  return prefill ? actors::node_role::prefill : actors::node_role::decode;
}
// The cluster file's role of `node`: a node process that starts anew serves in it, whichever role its lost
// predecessor had moved to; `view` files it so again.
inline void reset_role(cluster_view& view, uint32_t node) {
  view.set_role(node, serving_role(node < view.config.prefill_nodes));
}

// Whether node `node` holds nothing now: no request counted by its leader (asked with `self`, 500 ms), and
// nothing in its engines' HBM but what every engine of its role holds from the start.
bool node_holds_nothing(caf::scoped_actor& self, const cluster_view& view, runtime::node_io& io, uint32_t node,
                        const moved_engines& moved);

// Switches node `node` (drained: it holds nothing) to prefill or decode in place. `actors` are its actors as
// spawned (replaced here; its traffic queue is kept); what is spawned is added to `all` too. Sets the view's
// role to `switching` while its old actors stop (peers stop naming it as an all-to-all peer), then to the new
// one with the new handles.
void switch_node_role(caf::actor_system& sys, const run_base& base, const cluster_view_ptr& view, runtime::node_io& io,
                      uint32_t node, bool to_prefill, node_actors& actors, std::vector<caf::actor>& all,
                      moved_engines& moved);

// The handles peers need of a node's actors (no control actor: the caller adds its own).
node_handles handles_of(uint32_t node, const node_actors& actors);

}  // namespace dualpath::cluster
