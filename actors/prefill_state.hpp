#pragma once
// The prefill engine's state (docs/design.md §4): each request from its assignment to its hand-off, and the
// layer-wise pass in flight. Loading lives in prefill_engine.cpp, passes in prefill_pass.cpp; the copies
// they post come from the pure plans of runtime/kv_plan.hpp.
#include <array>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actors/cancelled_ids.hpp"
#include "actors/vocabulary.hpp"
#include "actors/engine_base.hpp"
#include "core/pass_timeline.hpp"
#include "schedule/batcher.hpp"

namespace dualpath::actors {

struct pe_request {
  turn_payload payload;
  schedule::assignment asg;
  runtime::kv_sources src;              // where its hit KV sits; src.valid once both loads returned
  uint32_t hit = 0;                     // hit blocks asked for
  uint32_t pe_valid = 0, de_valid = 0;  // per source, leading intact blocks
  uint32_t pending = 0;                 // loads and reservations still out
  status error;
  uint32_t corrupt = 0;
  std::optional<gpu::hbm_allocation> new_kv;  // [layer][token][bytes] for tokens [valid·bt, prompt)
  bool hit_forwarded = false;
  uint64_t kv_verified = 0, kv_corrupt = 0;
  uint32_t de_generation = 0;  // cluster_view::generation of its DE node at assignment
  bool cancelled = false;      // cancelled within a pass: dropped at the pass's end, not handed off

  uint64_t prompt() const { return payload.tokens.size(); }
};

struct pass_entry {
  pe_request* req;
  uint64_t cached, bsz;
  bool forward_hit;
};

// A pass's phases and the one function that enters each (prefill_pass.cpp):
//   admitting  --admitted()-->        waiting_kv   the worker took the job and, under ep_sync, the EP round began
//   waiting_kv --send_layers()-->     computing    the next layer's hit KV is staged: the worker has a layer
//   computing  --layer_computed()-->  waiting_kv   the worker has no layer left (or draining after the last)
//   draining   --finish_pass()-->     finishing    every layer's forward has landed
//   finishing  --(finish answered)-->  the pass ends: hand-off, the next pass
//   any        --abort_pass()-->      aborted      settled (its memory freed) once nothing is in flight
// Fetches run beside the phases: layer l is fetched once its staging slot is free (layer l - depth computed),
// so up to `depth` layers are staged ahead of compute.
enum class pass_phase { admitting, waiting_kv, computing, draining, finishing, aborted };
// The timeline's phases are the first five, in this order (core/pass_timeline.hpp).
static_assert(size_t(pass_phase::finishing) == size_t(pass_timeline::phase::finish) &&
              size_t(pass_phase::aborted) == pass_timeline::phase_count);

struct pass_state {
  pass_phase phase = pass_phase::admitting;
  uint32_t admissions_pending = 0;  // admitting: answers still awaited (the worker's start, the EP join)
  std::vector<pass_entry> entries;
  prefill_job_ptr job;
  runtime::staging_layout staging;
  gpu::hbm_allocation staging_alloc;
  uint32_t fetched_next = 0;  // next layer to fetch
  uint32_t fetches_out = 0;   // layers whose fetch is on its way (at most prefetch_layers)
  std::vector<bool> fetched;
  uint32_t computed = 0;  // layers computed
  uint32_t sent = 0;      // layers handed to the worker: `computed` and at most one more (send_layers)
  uint32_t forwards_pending = 0;
  // Requests of this pass still unanswered (copies, compute). An aborted pass keeps its HBM and its
  // requests' buffer slots until this is zero, so no late copy or kernel writes into memory that was
  // handed to another request.
  uint32_t in_flight = 0;
  // Hit-KV copies in flight per source node, and the nodes whose copies were written off when the node was
  // lost (their late answers are ignored): a lost node's copy never lands, so the pass need not wait for it.
  std::map<uint32_t, uint32_t> fetching_from;
  std::set<uint32_t> pulling_from;  // nodes whose buffers its own node reads (`de_fetch = "pull"`)
  std::set<uint32_t> written_off;
  uint64_t seq = 0;  // which pass: a written-off copy may answer after its pass settled
  bool aborted() const { return phase == pass_phase::aborted; }
  double layer_expected_s = 0;  // cost-model time of one layer of this pass (the compute deadline)
  int64_t began_ns = 0;
  int64_t compute_ns = 0;  // time the compute worker spent on this pass's layers
  // Wall time per phase (core/pass_timeline.hpp; the aborted phase is not counted), and when the current
  // phase began.
  std::array<int64_t, pass_timeline::phase_count> phase_ns{};
  int64_t phase_since = 0;
  void enter(pass_phase next, int64_t now) {
    if (phase != pass_phase::aborted) phase_ns[size_t(phase)] += now - phase_since;
    phase = next;
    phase_since = now;
  }
  // Since when the worker has been on its current layer: the send that found it idle, or the answer of the
  // layer before (the worker takes layers in order, so the next one starts then).
  int64_t worker_since_ns = 0;
  // `ep_sync` (docs/design.md §7.6): no layer is computed before the pass's EP round started (admitting), and
  // each layer ends when every member of the round computed it.
  double ep_deadline_s = 0;          // the round's layer deadline, as the EP group answered the join
  pass_timeline::fetch_log fetches;  // its hit-KV fetches' round trips, by source
};

struct prefill_state : engine_base {
  static inline const char* name = "prefill_engine";
  prefill_engine_actor::pointer self = nullptr;
  std::unique_ptr<schedule::prefill_batcher> batcher;
  std::map<uint64_t, pe_request> requests;
  std::deque<schedule::prefill_work> ready;
  std::unique_ptr<pass_state> pass;
  cancelled_ids cancelled_early;  // cancelled before their assignment arrived

  void init(prefill_engine_actor::pointer s, engine_setup st);
  void report();
  void fail(pe_request& r, const std::string& why);
  // Frees what the request holds on this side. The DE buffer slots go back too unless the DE took them.
  void cleanup(pe_request& r, bool release_de = true);
  // False once the request's DE node rejoined as a new process: its slots and hand-off died with the old one.
  bool de_current(const pe_request& r) const { return view().generation(r.asg.de_node) == r.de_generation; }
  // Aborts the pass if a request's DE node was replaced since its assignment: slots there belong to the
  // new process, so the pass reads none and writes none of them (§13). True if it aborted.
  bool abort_if_stale();

  // ---- assignment: fetch the tokens, then bring hit KV into the DRAM buffers (prefill_engine.cpp) ----
  void on_assign(const envelope<schema::Assignments>& e);
  void prepare(pe_request& r);
  void reserve_de_slots(pe_request& r, uint32_t count);
  void load_hit(pe_request& r, uint32_t node, const std::vector<block_key>& keys, uint32_t first);
  void on_loaded(uint64_t id, uint32_t node, uint32_t first, bool on_pe, const runtime::load_result& res);
  void part_done(uint64_t id, const status& s);
  void kv_ready(pe_request& r);
  // The request's client gave up: what it holds goes back now, or at the end of the pass it is in.
  void cancel(uint64_t id);
  // A request cancelled within the pass that just ended: removed without a hand-off.
  void drop_cancelled(pe_request& r);
  // Takes the request out of the queue of ready work (where a chunked one stays between passes).
  void unqueue(uint64_t id);

  // ---- forward passes (prefill_pass.cpp) ----
  void try_pass();
  bool allocate_pass(pass_state& p, const std::vector<schedule::batch_entry>& batch);
  uint32_t staging_depth() const;  // layers of hit KV staged at once: all of them in `basic` (docs/design.md §7.7)
  void fetch_layer();
  void verify_staged(uint32_t layer);
  // Moves the pass on where its phase waits on nothing but staged KV (waiting_kv) or landed forwards (draining).
  void advance();
  void admitted();
  // Hands the worker every layer whose KV is staged while it holds at most one other (send_layers), then
  // sets the phase from what the worker holds.
  void send_layers();
  void compute_layer(uint32_t layer);
  void layer_computed(uint32_t layer);
  void forward_layer(uint32_t layer, runtime::forward_part part);
  void record_timeline(pass_state& p, int64_t t);
  // EP lockstep (prefill_pass.cpp): join the group's round, wait at each layer; no-ops without ep_sync.
  void ep_join();
  void ep_barrier(uint32_t layer, double attention_s);
  void finish_pass();
  void hand_off(pass_state& p, int64_t first_token_ns);
  void abort_pass(const std::string& why, failure_kind kind = failure_kind::fatal);
  // A request of the pass answered: false when the pass was aborted (and is settled once all have).
  bool returned();
  // returned() for a hit-KV copy of pass `seq` from `node`: false, and nothing counted, once written off.
  bool fetch_returned(uint64_t seq, uint32_t node);
  // Node `node` was lost (docs/design.md §13): requests waiting on it fail now, the pass's copies from it
  // are written off and the pass is aborted (pass_node_lost), and nothing more is asked of it.
  void node_lost(uint32_t node);
  void pass_node_lost(uint32_t node);
  bool in_pass(const pe_request& r) const;  // whether `r` is an entry of the pass in flight
  // Whether `node` was lost and has not rejoined since (a rejoin bumps its generation).
  bool is_lost(uint32_t node) const {
    const auto it = lost_at.find(node);
    return it != lost_at.end() && it->second == view().generation(node);
  }
  std::map<uint32_t, uint32_t> lost_at;  // node -> its generation when it was lost
  uint64_t passes_begun = 0;
  void settle();
};

}  // namespace dualpath::actors
