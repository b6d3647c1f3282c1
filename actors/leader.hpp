#pragma once
// A node's leader (docs/design.md §3): keeps its group's view (seq_e, tok_e, free HBM per engine, the node's
// read_q), reports it to the scheduler, and for a prefill group fetches work and hands it to its engines.
#include <caf/fwd.hpp>

#include "actors/vocabulary.hpp"
#include "actors/cluster_view.hpp"
#include "runtime/node_doors.hpp"

namespace dualpath::actors {

leader_actor spawn_leader(caf::actor_system& sys, cluster_view_ptr view, uint32_t node,
                          runtime::node_services* services);

}  // namespace dualpath::actors
