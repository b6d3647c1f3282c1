#pragma once
// Clients of the serving front end (docs/design.md §18): a fixed pool of them, each one an agent id of the
// cluster, runs the turns that HTTP requests ask for, one at a time, submitting each to the scheduler and
// serving its tokens to the PE as an agent client does.
#include <caf/fwd.hpp>

#include "actors/cluster_view.hpp"
#include "actors/vocabulary.hpp"

namespace dualpath::actors {

// Client `agent` of `view` (its handle goes to view->clients[agent] before any request flows).
serve_client_actor spawn_serve_client(caf::actor_system& sys, cluster_view_ptr view, uint32_t agent);

}  // namespace dualpath::actors
