#pragma once
// Actor interfaces of the cluster runtime (DESIGN §3): traffic queue, compute worker, engine, leader and
// agent client. The scheduler's interface is in actors/scheduler.hpp. Cross-node messages carry Cap'n
// Proto envelopes (schema/runtime.capnp); messages between an engine and its own compute worker stay in
// one process and carry pointers to the job (KV never travels in a message).
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <memory>
#include <string>
#include <vector>

#include "actors/type_ids.hpp"
#include "gpu/backend.hpp"

namespace dualpath::actors {

// One node's data plane (runtime::node_io): SNIC reads into the DRAM buffer, CNIC copies, buffer slots.
using traffic_queue_actor = caf::typed_actor<
    // Reserve buffer slots for the keys and read those Full Blocks through the SNIC gate into them.
    caf::replies_to<atom::load, envelope<schema::LoadBlocks>>::with<envelope<schema::LoadResult>>,
    // Reserve `count` empty buffer slots (waits while the buffer is full: backpressure).
    caf::replies_to<atom::reserve, uint32_t>::with<envelope<schema::Slots>>,
    // Return slots to the buffer.
    caf::reacts_to<atom::release, envelope<schema::Slots>>,
    // Post a batch of copies from this node's CNICs; replies "" once all landed, else the first error.
    caf::replies_to<atom::copy, envelope<schema::CopyBatch>>::with<std::string>>;

// Work for a compute worker: one prefill pass driven layer by layer, or one decode step.
struct prefill_job {
  std::vector<gpu::prefill_item> items;
  std::unique_ptr<gpu::prefill_pass> pass;
  std::vector<int32_t> tokens;  // filled by finish
};
struct layer_inputs {
  uint32_t layer = 0;
  std::vector<std::vector<gpu::kv_span>> cached;
  std::vector<std::byte*> new_kv;
};
struct decode_job {
  std::vector<gpu::decode_item> items;
  std::vector<int32_t> tokens;
};
using prefill_job_ptr = std::shared_ptr<prefill_job>;
using layer_inputs_ptr = std::shared_ptr<layer_inputs>;
using decode_job_ptr = std::shared_ptr<decode_job>;

// The "GPU actor" of one engine: runs on its own thread because kernels block. Replies "" or an error.
using compute_actor = caf::typed_actor<
    // Begin a prefill pass over job->items.
    caf::replies_to<atom::start, prefill_job_ptr>::with<std::string>,
    // Run one layer of the pass with that layer's cached KV and new-KV destinations.
    caf::replies_to<atom::layer, prefill_job_ptr, layer_inputs_ptr>::with<std::string>,
    // Final norm, LM head, greedy tokens into job->tokens.
    caf::replies_to<atom::finish, prefill_job_ptr>::with<std::string>,
    // One decode step over job->items; tokens into job->tokens.
    caf::replies_to<atom::decode, decode_job_ptr>::with<std::string>>;

// An engine (one GPU) in the prefill or decode role.
using engine_actor = caf::typed_actor<
    // PE: assignments from the leader (those naming this engine are taken).
    caf::reacts_to<atom::assign, envelope<schema::Assignments>>,
    // DE: a prefilled request whose KV waits in this engine's node buffer.
    caf::reacts_to<atom::handoff, envelope<schema::Handoff>>,
    // Internal: try to start the next pass or decode step.
    caf::reacts_to<atom::tick>,
    // Internal (DE): one Full Block of this request reached storage.
    caf::reacts_to<atom::persisted, uint64_t>>;

// A node's leader: collects its engines' load and talks to the scheduler for the group.
using leader_actor = caf::typed_actor<
    // Engine -> leader: seq_e, tok_e, free HBM of one engine.
    caf::reacts_to<atom::engine_st, uint32_t, uint32_t, uint64_t, uint64_t>,
    // Internal: periodic report (and fetch, for a PE group).
    caf::reacts_to<atom::tick>>;

// One agent replaying its trajectory.
using client_actor = caf::typed_actor<
    // PE -> client: the tokens of a request this agent submitted.
    caf::replies_to<atom::turn, uint64_t>::with<envelope<schema::TurnPayload>>,
    // DE -> client: the turn finished.
    caf::reacts_to<atom::result, envelope<schema::TurnResult>>,
    // Launcher / internal: start the next turn.
    caf::reacts_to<atom::start>>;

}  // namespace dualpath::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dualpath::actors::prefill_job_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dualpath::actors::layer_inputs_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dualpath::actors::decode_job_ptr)
