#pragma once
// Spawning the per-node and per-engine helper actors: the traffic queue and the compute worker.
#include <caf/fwd.hpp>

#include <memory>

#include "actors/vocabulary.hpp"
#include "runtime/node_doors.hpp"
#include "protocol/interfaces.hpp"

namespace dualpath::actors {

// The node's traffic queue: wraps `io` (which must outlive the actor).
traffic_queue_actor spawn_traffic_queue(caf::actor_system& sys, runtime::data_plane& plane);

// The engine's compute worker, on a thread of its own (kernels block).
compute_actor spawn_compute_worker(caf::actor_system& sys, std::shared_ptr<gpu::compute_backend> backend);

}  // namespace dualpath::actors
