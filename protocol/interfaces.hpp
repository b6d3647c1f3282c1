#pragma once
// Every typed actor interface of DualPath, in one place (docs/design.md §3). For each handler: what it
// does, what it answers, and how long its callers wait. Cross-process messages carry Cap'n Proto
// envelopes (protocol/*_codec.hpp); messages between an engine and its own compute worker stay in one
// process and carry pointers to the job (KV bytes never travel in a message).
//
// Timeouts, every one derived from the cluster's `timeout_s` in protocol/waits.hpp: a request between
// actors waits at most `timeout_s` (clients, leaders, the launcher, the control port), an engine's
// request to a traffic queue `2·timeout_s`, the compute worker `timeout_s` plus twenty times the cost
// model's estimate of the pass; the control client has its own deadline (`ctl --timeout-ms`).
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpu/backend.hpp"
#include "protocol/handles.hpp"
#include "protocol/type_ids.hpp"

namespace dualpath::protocol {

// ---- scheduler (one per cluster, docs/design.md §7) ----
using scheduler_actor = caf::typed_actor<
    // Client: queue one request (schema::Request) at the tail of the global FIFO; answers the number of
    // requests now waiting. Clients wait `timeout_s`.
    caf::replies_to<atom::submit, envelope<schema::Request>>::with<uint64_t>,
    // Leader, every 2 ms: its group's engines (seq_e, tok_e, free HBM), its node's read_q, and the requests
    // those numbers count; the scheduler's fresh view replaces the numbers and keeps charging the requests
    // they do not count yet (docs/design.md §7.1). No answer.
    caf::reacts_to<atom::report, envelope<schema::GroupReport>>,
    // PE leader: ask for work for its group's engines; answers the assignments the active policy makes now
    // (possibly none): PE, DE, read path and, for split, the block ranges. Leaders wait `timeout_s`.
    caf::replies_to<atom::fetch, envelope<schema::Fetch>>::with<envelope<schema::Assignments>>,
    // Control: switch the active policy for requests not yet assigned. An unknown name is refused
    // (ok = false, the running policy stays) with the list of known names.
    caf::replies_to<atom::policy, atom::set, std::string>::with<envelope<schema::PolicyStatus>>,
    // Control: the active policy and the known names.
    caf::replies_to<atom::policy, atom::get>::with<envelope<schema::PolicyStatus>>,
    // Control: queue length and counters.
    caf::replies_to<atom::stats>::with<envelope<schema::SchedulerStats>>,
    // Internal: the scripted switch with this index is due (sent to itself with delayed_send).
    caf::reacts_to<atom::scripted, uint32_t>,
    // Launcher: node N is lost (its process died or stopped answering, docs/design.md §13). Its engines leave
    // the fresh view, so nothing more is assigned to them; answers the requests assigned with their PE or DE
    // on N and not yet superseded by their agent's next submit (the clients re-run them). The launcher waits
    // `timeout_s`.
    caf::replies_to<atom::lost, uint32_t>::with<std::vector<uint64_t>>,
    // Launcher: lost node N is back (a new process, already wired to every survivor): its leader's reports
    // count again, so its engines get work from its first report on. Answers N. The launcher waits
    // `timeout_s`.
    caf::replies_to<atom::rejoin, uint32_t>::with<uint32_t>,
    // Launcher (adaptive P/D, docs/design.md §7.9): node N is to change role. Its engines leave the fresh
    // view, so nothing more is assigned to them, as for a lost node, but nothing is re-run: answers the
    // requests in flight with their DE on N (N's decode engines may not have them yet), which the launcher
    // waits for before the switch. `rejoin(N)` brings N back, in the role its leader's next report names. The
    // launcher waits `timeout_s`.
    caf::replies_to<atom::drain, uint32_t>::with<std::vector<uint64_t>>,
    // Serving client: its request was given up (docs/design.md §18). Still waiting: it leaves the queue and
    // the answer is (none, none); assigned: answers its PE and DE engine, which the client tells in turn.
    // none = UINT32_MAX. Clients wait `timeout_s`.
    caf::replies_to<atom::cancel, uint64_t>::with<uint32_t, uint32_t>>;

// ---- control port (published for `dualpath ctl`; only this narrow interface is reachable) ----
// Every command starts with the proof of the cluster's secret (core/secret.hpp, docs/design.md §13); a
// wrong one is answered with an error, logged and counted, and never reaches the scheduler.
using control_actor = caf::typed_actor<
    // Forwarded to the scheduler: switch its policy (see scheduler_actor).
    caf::replies_to<atom::policy, atom::set, std::string, std::string>::with<envelope<schema::PolicyStatus>>,
    // Forwarded: the active policy and the known names.
    caf::replies_to<atom::policy, atom::get, std::string>::with<envelope<schema::PolicyStatus>>,
    // Forwarded: queue length and counters, plus the commands this port refused.
    caf::replies_to<atom::stats, std::string>::with<envelope<schema::SchedulerStats>>>;

// ---- traffic queue (one per node): its data plane, runtime::node_io ----
// A job the data plane finished, handed back to run on the traffic queue's own thread (it delivers the
// response promise there, never from the data plane's progress thread).
using completion_ptr = std::shared_ptr<std::function<void()>>;

using traffic_queue_actor = caf::typed_actor<
    // Reserve buffer slots for the keys and read those Full Blocks through the SNIC gate into them;
    // answers the slots and how many leading blocks arrived intact (a bad block ends the valid prefix and
    // names its reason: that is data, not a failure). Fails (capacity, timeout) when no read could start.
    // Engines wait `timeout_s`; the node gives up on its own after the same time.
    caf::replies_to<atom::load, envelope<schema::LoadBlocks>>::with<envelope<schema::LoadResult>>,
    // Reserve `count` empty buffer slots (waits FIFO while the buffer is full: backpressure); answers the
    // slots. Fails with capacity (more than the whole buffer) or timeout. Engines wait `timeout_s`.
    caf::replies_to<atom::reserve, uint32_t>::with<envelope<schema::Slots>>,
    // Return slots to the buffer. No answer.
    caf::reacts_to<atom::release, envelope<schema::Slots>>,
    // A local decode engine takes a hand-off's slots from the engine that sent it (docs/design.md §13):
    // answers whether that engine still held them all (false: it went down and they went back). Local; the
    // decode engine waits `timeout_s`.
    caf::replies_to<atom::adopt, envelope<schema::Slots>, caf::actor_addr>::with<bool>,
    // This node's control actor: the process of a lost node (its CAF node); the slots its engines held here
    // go back to the buffer. Local. No answer.
    caf::reacts_to<atom::lost, caf::node_id>,
    // Post a batch of copies from this node's CNICs; answers the bytes moved once all landed, or fails
    // (transfer) with the first error completion. Engines of other nodes (fetches from this node's buffer);
    // an engine posts its own node's copies straight to the data plane (runtime/node_doors.hpp). Engines
    // wait `timeout_s`.
    caf::replies_to<atom::copy, envelope<schema::CopyBatch>>::with<uint64_t>,
    // Internal: the data plane finished a job; run its completion here.
    caf::reacts_to<atom::complete, completion_ptr>>;

// ---- compute worker (one per engine, the "GPU actor", on a thread of its own because kernels block) ----
// Work for it: one prefill pass driven layer by layer, or one decode step.
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
  // Where the step writes each item's new KV (items point into it). The job owns it, so it outlives an
  // engine that stops while its worker still runs the step.
  std::vector<std::byte> new_kv;
};
using prefill_job_ptr = std::shared_ptr<prefill_job>;
using layer_inputs_ptr = std::shared_ptr<layer_inputs>;
using decode_job_ptr = std::shared_ptr<decode_job>;

// Every handler fails with errc::compute carrying the backend's message (a refused allocation, a kernel
// error); the worker itself never dies of it. Engines wait `timeout_s` plus a bound derived from the cost
// model of the work (actors/engine_base.hpp), so a long pass is not cut short and a hung one is noticed.
using compute_actor = caf::typed_actor<
    // Begin a prefill pass over job->items; answers the number of items.
    caf::replies_to<atom::start, prefill_job_ptr>::with<uint32_t>,
    // Run one layer of the pass with that layer's cached KV and new-KV destinations; answers the layer.
    caf::replies_to<atom::layer, prefill_job_ptr, layer_inputs_ptr>::with<uint32_t>,
    // Final norm, LM head, greedy tokens into job->tokens; answers the number of tokens.
    caf::replies_to<atom::finish, prefill_job_ptr>::with<uint32_t>,
    // One decode step over job->items, tokens into job->tokens; answers the number of tokens.
    caf::replies_to<atom::decode, decode_job_ptr>::with<uint32_t>>;

// ---- engines (one per GPU, docs/design.md §4) ----
// A prefill engine: layer-wise prefill of the requests its leader assigns it.
using prefill_engine_actor = caf::typed_actor<
    // Leader: assignments of the scheduler (those naming this engine are taken). No answer.
    caf::reacts_to<atom::assign, envelope<schema::Assignments>>,
    // Internal: try to start the next pass.
    caf::reacts_to<atom::tick>,
    // Internal: the earliest deadline of its traffic-queue, compute-worker and EP-group requests came; those
    // past theirs fail as timeouts (actors/request_watch.hpp).
    caf::reacts_to<atom::expire>,
    // Serving client: the request was cancelled. Whatever it holds here (buffer slots, HBM) goes back, at
    // once or, within a pass, at the pass's end; it is not handed off. No answer.
    caf::reacts_to<atom::cancel, uint64_t>,
    // Its node's control actor: node N was lost. A pass still fetching hit KV from N's buffer is aborted now
    // rather than after those copies' data-plane deadline: a dead node writes nothing more. No answer.
    caf::reacts_to<atom::lost, uint32_t>>;

// A decode engine: decodes the requests prefill engines hand off to it and persists their blocks.
using decode_engine_actor = caf::typed_actor<
    // PE: a prefilled request whose KV waits in this engine's node buffer. No answer.
    caf::reacts_to<atom::handoff, envelope<schema::Handoff>>,
    // Internal: try the next decode step.
    caf::reacts_to<atom::tick>,
    // Internal: the earliest deadline of its traffic-queue and compute-worker requests came; those past theirs
    // fail as timeouts (actors/request_watch.hpp).
    caf::reacts_to<atom::expire>,
    // Internal (from the background writer): one Full Block of this request reached storage.
    caf::reacts_to<atom::persisted, uint64_t>,
    // Serving client: the request was cancelled. Its DE buffer slots and HBM go back (after the decode step
    // or copy in flight); blocks already sent to storage still land. No answer.
    caf::reacts_to<atom::cancel, uint64_t>>;

// ---- EP group (one per PE group under `[cluster] ep_sync`, docs/design.md §7.6) ----
// The group's prefill engines run their passes in rounds and end every layer together (the MoE
// all-to-all), so the slowest member sets each layer's pace. Logic: runtime/ep_rounds.hpp. In-process only.
// Every wait is bounded by the group's own deadlines: a layer (or the gather between rounds) that is not
// complete within `3·timeout_s + 20 ×` the largest expected layer time of the round's members goes on
// without the members that did not report it, and their waits fail.
using ep_group_actor = caf::typed_actor<
    // PE with a pass ready (engine, expected seconds per layer): answered when the round it joins starts,
    // with that round's layer deadline in seconds. Fails (timeout) if the engine leaves meanwhile. PEs wait
    // the group's round bound for their own pass (actors/prefill_pass.cpp).
    caf::replies_to<atom::join, uint32_t, double>::with<double>,
    // PE computed a layer of its pass (engine, layer, its compute seconds): answered with the layer once
    // every member reported it. Fails (timeout) for an engine dropped at a deadline or not in the round.
    // PEs wait twice the layer deadline the join answered.
    caf::replies_to<atom::layer, uint32_t, uint32_t, double>::with<uint32_t>,
    // PE: its pass ended early (failed, aborted); out of the round or the queue, its waits fail. No answer.
    caf::reacts_to<atom::leave, uint32_t>,
    // PE: it finished a pass and has no next one ready, so the next round does not wait for it. No answer.
    caf::reacts_to<atom::idle, uint32_t>,
    // Internal: the deadline of (round, layer) passed; layer = layers is the gather after that round.
    caf::reacts_to<atom::expire, uint64_t, uint32_t>>;

// ---- leader (one per node): its group's view, reported to the scheduler ----
using leader_actor = caf::typed_actor<
    // Engine -> leader: seq_e, tok_e, free HBM of one engine, and the requests they count. No answer.
    caf::reacts_to<atom::engine_st, uint32_t, uint32_t, uint64_t, uint64_t, std::vector<uint64_t>>,
    // Internal, every 2 ms: report to the scheduler (and fetch, for a PE group).
    caf::reacts_to<atom::tick>,
    // Internal: the deadline of its fetch came; a fetch past it fails as a timeout (actors/request_watch.hpp).
    caf::reacts_to<atom::expire>,
    // Launcher (adaptive P/D, docs/design.md §7.9): the requests the node's engines hold now, as they last
    // reported (seq_e summed); a draining node switches role at 0. The launcher waits `timeout_s`.
    caf::replies_to<atom::held>::with<uint32_t>>;

// ---- agent client (one per agent, docs/design.md §11) ----
using client_actor = caf::typed_actor<
    // PE -> client: the tokens of a request this agent submitted. PEs wait `timeout_s`.
    caf::replies_to<atom::turn, uint64_t>::with<envelope<schema::TurnPayload>>,
    // DE (or a PE that failed it) -> client: the turn finished. No answer.
    caf::reacts_to<atom::result, envelope<schema::TurnResult>>,
    // PE (the first token) and DE (each decode step's token) -> client, for a turn submitted with `stream`:
    // the tokens as they are made. No answer.
    caf::reacts_to<atom::tokens, envelope<schema::TurnTokens>>,
    // Launcher / internal: start the next turn.
    caf::reacts_to<atom::start>,
    // Launcher: `losses` nodes have been lost so far, and these requests were in flight on the latest one.
    // The current turn is re-run under a new attempt if it is among them, or if it failed since it was
    // submitted (its failure is held for cluster_view::node_loss_grace_s). No answer.
    caf::reacts_to<atom::lost, uint32_t, std::vector<uint64_t>>,
    // Internal: the grace of a failed attempt (this request) passed without news of a lost node: the turn
    // fails now.
    caf::reacts_to<atom::expire, uint64_t>>;

// ---- serving (docs/design.md §18) ----
// A client of the serving front end: a client as above, to the engines, that runs the turns the front end
// asks for, one at a time.
using serve_client_actor = client_actor::extend<
    // Front end -> client: run this turn (prompt tokens, tokens to generate, stream, stop tokens; request id
    // and agent are the client's own). No answer: the asker is sent (tokens, TurnTokens) as they are made when
    // `stream` is set, then (result, TurnResult), a failed one if the client is busy. The front end waits the
    // request's deadline (`dualpath serve --request-timeout`) and cancels on it.
    caf::reacts_to<atom::ask, envelope<schema::TurnPayload>>,
    // Front end -> client: the asker gave up (hung up, deadline): the turn is cancelled wherever it is and the
    // client takes the next ask at once. No answer.
    caf::reacts_to<atom::cancel>>;

// ---- multi-process runs (docs/design.md §13) ----
// The launcher's registry. Every message carries the proof of the cluster's secret (core/secret.hpp); one
// without the right proof is refused, logged and counted (docs/design.md §13).
using registry_actor = caf::typed_actor<
    // Node -> registry: node N joins; answers its run (cluster file text and policy). Nodes wait their
    // start-up timeout.
    caf::replies_to<atom::join, uint32_t, std::string>::with<envelope<schema::NodeSetup>>,
    // Node -> registry: its actors and endpoints are up. Answered once every node has registered, with
    // every handle of the cluster and every endpoint.
    caf::replies_to<atom::wire, node_handles, envelope<schema::FabricDirectory>,
                    std::string>::with<cluster_handles, envelope<schema::FabricDirectory>>,
    // Node -> registry: node N connected its endpoints to every peer. No answer. A node that rejoins is
    // announced to the launcher from here, as (rejoin, its handles, its endpoints).
    caf::reacts_to<atom::ready, uint32_t, std::string>,
    // Launcher -> registry: node N was lost; a new process may now join and wire as N, and is answered at
    // once with the cluster as it is (docs/design.md §13). No answer.
    caf::reacts_to<atom::lost, uint32_t, std::string>>;

// A node process's own small control actor, reached by the launcher.
using node_control_actor = caf::typed_actor<
    // The node's data-plane counters. The launcher waits `timeout_s`.
    caf::replies_to<atom::stats>::with<envelope<schema::NodeCounters>>,
    // The node's free DRAM buffer slots and each engine's free HBM now: its counters without the SNIC's
    // samples, small enough to ask every few seconds (serve's /metrics). The launcher waits `timeout_s`.
    caf::replies_to<atom::buffers>::with<envelope<schema::NodeCounters>>,
    // The run is over: stop this node's actors and exit.
    caf::reacts_to<atom::stop>,
    // The launcher's heartbeat (docs/design.md §13): answers the node's index. A node that does not answer
    // within the heartbeat deadline is treated as lost. The launcher waits that deadline.
    caf::replies_to<atom::ping>::with<uint32_t>,
    // The launcher: node N was lost; this node's copies to it fail at once from now on, and its prefill
    // engines abort a pass still fetching from N. No answer.
    caf::reacts_to<atom::lost, uint32_t>,
    // The launcher: lost node N is back with these handles and endpoints; this node's engines and copies
    // reach it from the answer on. A node of higher index than N first dials N's direct link (at most
    // cluster::dial_timeout, cluster/peer_links.hpp). Answers N. The launcher waits `timeout_s`.
    caf::replies_to<atom::rejoin, node_handles, envelope<schema::FabricDirectory>>::with<uint32_t>,
    // Adaptive P/D (docs/design.md §7.9), to the node that moves: answers 0 when it holds nothing (no request
    // counted by its leader, no HBM allocation beyond its role's fixed ones), else 1. The launcher waits 500 ms.
    caf::replies_to<atom::held>::with<uint32_t>,
    // To the drained node: switch to prefill (true) or decode in place and answer the new actors' handles.
    // Refused while it holds anything. The launcher waits 2 timeout_s (old actors stop, new ones start).
    caf::replies_to<atom::role, bool>::with<node_handles>,
    // To every other node: node h.node is now in role `r` (actors::node_role; switching: no handles, no
    // engine of it is named as an all-to-all peer), its actors those of `h`. Answers h.node. The launcher
    // waits `timeout_s`.
    caf::replies_to<atom::role, node_handles, uint8_t>::with<uint32_t>>;

}  // namespace dualpath::protocol

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dualpath::protocol::prefill_job_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dualpath::protocol::layer_inputs_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dualpath::protocol::decode_job_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(dualpath::protocol::completion_ptr)
