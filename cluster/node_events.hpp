#pragma once
// What a launcher does when one of its node processes is lost or joins again (docs/design.md §13), shared by a
// trace run (cluster/turn_collector.hpp) and a server (serve/server.hpp): the scheduler's view is updated, and
// the clients learn which requests were in flight on the lost node.
#include <caf/scoped_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actors/cluster_view.hpp"
#include "cluster/vocabulary.hpp"
#include "core/status.hpp"

namespace dualpath::cluster {

// Whether the cluster can go on without the nodes in `lost`: "" if so, else why not (no prefill or no decode
// engine remains), naming how each was lost.
std::string without_nodes(const cluster_view& view, const std::vector<std::pair<uint32_t, std::string>>& lost);

// Node `node` is lost (the `losses`-th loss; node_processes::announce_lost has told the survivors and the
// registry): the scheduler drops it and says which requests were on it, and every client is told those.
// Unavailable if the scheduler does not answer within the request wait.
status tell_lost(caf::scoped_actor& self, const cluster_view& view, uint32_t node, uint32_t losses);

// Lost node `node` is back and wired (node_processes::poll_rejoined): the scheduler takes it again.
status tell_rejoined(caf::scoped_actor& self, const cluster_view& view, uint32_t node);

}  // namespace dualpath::cluster
