#pragma once
// Engines (docs/design.md §3, §4): a prefill engine runs layer-wise prefill over hit KV that arrives through
// either read path; a decode engine takes prefilled requests into its HBM, decodes, and persists every
// filled block. Both report their load to their node's leader.
#include <caf/fwd.hpp>

#include <memory>

#include "actors/vocabulary.hpp"
#include "actors/cluster_view.hpp"
#include "protocol/interfaces.hpp"
#include "runtime/node_doors.hpp"

namespace dualpath::actors {

struct engine_setup {
  uint32_t engine = 0;  // global id
  cluster_view_ptr view;
  runtime::node_services* node = nullptr;  // this engine's node (same process): HBM, write-back
  compute_actor worker;
  std::shared_ptr<gpu::compute_backend> backend;
  ep_group_actor ep_group;  // prefill, `ep_sync`: its PE group's lockstep (else empty)
};

prefill_engine_actor spawn_prefill_engine(caf::actor_system& sys, engine_setup setup);
decode_engine_actor spawn_decode_engine(caf::actor_system& sys, engine_setup setup);

// Monotonic clock shared by every actor of a run (nanoseconds).
int64_t now_ns();

}  // namespace dualpath::actors
