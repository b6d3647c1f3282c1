// Prefill engine: assignment -> hit KV into DRAM buffers (PE and/or DE node) -> layer-wise prefill passes
// under the compute quota (prefill_pass.cpp) -> per-layer forwarding into the DE node's buffer -> hand-off.
#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "protocol/request_ids.hpp"
#include "actors/prefill_state.hpp"
#include "core/cost_model.hpp"
#include "protocol/errors.hpp"
#include "protocol/scheduler_codec.hpp"

namespace dualpath::actors {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void prefill_state::init(prefill_engine_actor::pointer s, engine_setup st) {
  self = s;
  bind(std::move(st));
  const auto fit = setup.backend->fit();
  // docs/design.md §7.6-7.7: DualPath's modes bound a pass by the quota in its configured scope; the
  // framework baselines take every ready request (only the HBM budget of try_pass bounds them).
  const double quota_s = view().mode.compute_quota ? view().quota_s() : schedule::no_quota_s;
  batcher = std::make_unique<schedule::prefill_batcher>(
      schedule::quota_estimate(view().config.quota_scope, setup.backend->model(),
                               schedule::flops_fit{fit.fixed_s, fit.seconds_per_flop}),
      quota_s);
  report();
}

// The ids tell the scheduler which of its charges these numbers already count (docs/design.md §7.1): a
// request counts from its assignment on.
void prefill_state::report() {
  uint64_t tok = 0;
  std::vector<uint64_t> ids;
  ids.reserve(requests.size());
  for (auto& [id, r] : requests) {
    ids.push_back(id);
    // Until its tokens arrive a request counts what the scheduler was told it appends.
    tok += r.payload.tokens.empty() ? r.asg.request.append_tokens
                                    : r.prompt() - std::min<uint64_t>(r.prompt(), r.src.valid * geo().block_tokens);
  }
  self->send(view().leader(node()), atom::engine_st_v, setup.engine, uint32_t(requests.size()), tok, hbm->free_bytes(),
             std::move(ids));
}

void prefill_state::fail(pe_request& r, const std::string& why) {
  answer_failure(self, r.payload, why);
  cleanup(r);
  requests.erase(r.payload.request);
  report();
}

void prefill_state::cleanup(pe_request& r, bool release_de) {
  auto send_release = [this](uint32_t node, const std::vector<uint32_t>& slots) {
    std::vector<uint32_t> real;
    for (auto s : slots)
      if (s != UINT32_MAX) real.push_back(s);
    if (!real.empty()) self->send(view().traffic_queue(node), atom::release_v, encode(slot_list{real, 0}));
  };
  send_release(r.asg.pe_node, r.src.pe_slots);
  if (release_de && de_current(r)) send_release(r.asg.de_node, r.src.de_slots);
  r.src.pe_slots.clear();
  r.src.de_slots.clear();
  if (r.new_kv) {
    hbm->free(*r.new_kv);
    r.new_kv.reset();
  }
}

void prefill_state::on_assign(const envelope<schema::Assignments>& e) {
  for (auto& a : decode(e)) {
    if (a.pe != setup.engine || cancelled_early.take(a.request.id)) continue;
    auto& r = requests[a.request.id];
    r.asg = a;
    r.src.pe = a.pe;
    r.src.pe_node = a.pe_node;
    r.src.de = a.de;
    r.src.de_node = a.de_node;
    r.de_generation = view().generation(a.de_node);
    r.payload.request = a.request.id;
    r.payload.agent = agent_of(a.request.id);
    const int64_t assigned = now_ns();
    self->request(view().clients.at(r.payload.agent), timeout(), atom::turn_v, a.request.id)
        .then(
            [this, id = a.request.id, assigned](const envelope<schema::TurnPayload>& p) {
              auto it = requests.find(id);
              if (it == requests.end()) return;
              it->second.payload = decode(p);
              it->second.payload.times.assigned = assigned;
              prepare(it->second);
            },
            [this, id = a.request.id](caf::error& err) {
              auto it = requests.find(id);
              if (it != requests.end()) fail(it->second, "client did not answer: " + describe(err));
            });
  }
  report();
}

void prefill_state::prepare(pe_request& r) {
  if (is_lost(r.asg.de_node))
    return fail(r, "DE node " + std::to_string(r.asg.de_node) + " was lost before this request's KV was read");
  const auto& g = geo();
  const uint32_t blocks = g.blocks_for(r.prompt());
  const uint32_t max_hit = uint32_t((r.prompt() - 1) / g.block_tokens);  // at least one token to compute
  r.hit = std::min(r.payload.hit_blocks, max_hit);
  switch (r.asg.path) {
    case schedule::read_path::pe: r.src.pe_blocks = r.hit; break;
    case schedule::read_path::de: r.src.pe_blocks = 0; break;
    case schedule::read_path::split: r.src.pe_blocks = std::min(r.asg.pe_blocks, r.hit); break;
  }
  if (!view().mode.de_read_path) r.src.pe_blocks = r.hit;  // e.g. the oracle: everything through the PE buffer
  std::vector<block_key> keys = block_keys(r.payload.tokens, g.block_tokens);
  keys.resize(r.hit);
  // DE buffer: a slot for every block that does not arrive there from storage.
  const uint32_t de_read = r.hit - r.src.pe_blocks;
  r.src.de_slots.assign(blocks, UINT32_MAX);
  r.pending = 1;
  if (r.src.pe_blocks > 0) ++r.pending;
  if (de_read > 0) ++r.pending;
  // Everything below may answer synchronously only through messages, so `r` stays valid while we post.
  reserve_de_slots(r, blocks - de_read);
  if (r.src.pe_blocks > 0) load_hit(r, r.asg.pe_node, {keys.begin(), keys.begin() + r.src.pe_blocks}, 0);
  if (de_read > 0) load_hit(r, r.asg.de_node, {keys.begin() + r.src.pe_blocks, keys.end()}, r.src.pe_blocks);
}

void prefill_state::reserve_de_slots(pe_request& r, uint32_t count) {
  const uint64_t id = r.payload.request;
  const uint32_t de_node = r.asg.de_node;
  watch.request(self, view().traffic_queue(de_node), data_plane_timeout(), atom::reserve_v, count)
      .then(
          [this, id, de_node](const envelope<schema::Slots>& e) {
            auto s = decode(e);
            auto it = requests.find(id);
            if (it == requests.end()) {
              // The request failed meanwhile: the slots go straight back, or they would leak for good.
              return self->send(view().traffic_queue(de_node), atom::release_v, e);
            }
            auto& q = it->second;
            size_t k = 0;
            for (uint32_t b = 0; b < q.src.de_slots.size(); ++b)
              if (b < q.src.pe_blocks || b >= q.hit) q.src.de_slots[b] = s.slots[k++];
            part_done(id, {});
          },
          [this, id](caf::error& err) {
            part_done(id, status(errc::unavailable, "DE buffer reservation failed: " + describe(err)));
          });
}

// Reads hit blocks [first, first + keys.size()) through `node`'s SNIC into its buffer. Blocks read on the
// DE node are already where the DE needs them, so their slots join the request's DE buffer image.
void prefill_state::load_hit(pe_request& r, uint32_t node, const std::vector<block_key>& keys, uint32_t first) {
  const uint64_t id = r.payload.request;
  const bool on_pe = node == r.asg.pe_node && first == 0;
  watch.request(self, view().traffic_queue(node), data_plane_timeout(), atom::load_v, encode_load(keys, id))
      .then([this, id, node, first,
             on_pe](const envelope<schema::LoadResult>& e) { on_loaded(id, node, first, on_pe, decode(e)); },
            [this, id, node](caf::error& err) {
              part_done(id, status(errc::unavailable,
                                   "KV read on node " + std::to_string(node) + " failed: " + describe(err)));
            });
}

void prefill_state::on_loaded(uint64_t id, uint32_t node, uint32_t first, bool on_pe, const runtime::load_result& res) {
  auto it = requests.find(id);
  if (it == requests.end()) {
    // The request failed while its blocks were read: their slots go back, or they would leak for good.
    if (!res.slots.empty()) self->send(view().traffic_queue(node), atom::release_v, encode(slot_list{res.slots, 0}));
    return;
  }
  auto& q = it->second;
  if (on_pe) {
    q.src.pe_slots = res.slots;
    q.pe_valid = res.valid;
  } else {
    for (size_t k = 0; k < res.slots.size(); ++k) q.src.de_slots[first + k] = res.slots[k];
    q.de_valid = res.valid;
  }
  if (res.valid < res.slots.size()) {
    q.corrupt += 1;
    spdlog::warn("engine {}: request {:x}: block {} unusable ({}), recomputing from there", setup.engine, id,
                 first + res.valid, res.status.message());
  }
  part_done(id, {});
}

void prefill_state::part_done(uint64_t id, const status& s) {
  auto it = requests.find(id);
  if (it == requests.end()) return;
  auto& q = it->second;
  if (!s.ok() && q.error.ok()) q.error = s;
  if (--q.pending > 0) return;
  if (!q.error.ok()) return fail(q, q.error.message());
  kv_ready(q);
}

void prefill_state::kv_ready(pe_request& r) {
  // A miss from the first bad block on: blocks after it are recomputed, whatever path they took.
  r.src.valid = r.pe_valid < r.src.pe_blocks ? r.pe_valid : r.src.pe_blocks + r.de_valid;
  r.payload.times.kv_ready = now_ns();
  const uint64_t cached = uint64_t(r.src.valid) * geo().block_tokens;
  ready.push_back({r.payload.request, cached, r.prompt() - cached});
  report();
  try_pass();
}

void prefill_state::cancel(uint64_t id) {
  const auto it = requests.find(id);
  if (it == requests.end()) return cancelled_early.add(id);
  auto& r = it->second;
  if (in_pass(r)) {
    r.cancelled = true;  // its KV may be in flight: hand_off drops it once the pass is done
    return;
  }
  // Loads and reservations still out find the request gone and give their slots straight back.
  spdlog::debug("engine {}: request {:x} cancelled", setup.engine, id);
  drop_cancelled(r);
  try_pass();
}

void prefill_state::node_lost(uint32_t node) {
  lost_at[node] = view().generation(node);
  // Requests outside the pass that wait on the node (a reservation or a load there, KV staged in its buffer)
  // fail now; their clients re-run them elsewhere. Answers that come late find them gone.
  std::vector<uint64_t> doomed;
  for (auto& [id, r] : requests)
    if (r.asg.de_node == node && !in_pass(r)) doomed.push_back(id);
  for (uint64_t id : doomed) {
    unqueue(id);
    fail(requests.at(id), "DE node " + std::to_string(node) + " was lost");
  }
  pass_node_lost(node);
  try_pass();
}

bool prefill_state::in_pass(const pe_request& r) const {
  return pass &&
         std::any_of(pass->entries.begin(), pass->entries.end(), [&](const pass_entry& e) { return e.req == &r; });
}

void prefill_state::unqueue(uint64_t id) {
  ready.erase(std::remove_if(ready.begin(), ready.end(), [&](const auto& w) { return w.request == id; }), ready.end());
}

void prefill_state::drop_cancelled(pe_request& r) {
  const uint64_t id = r.payload.request;
  unqueue(id);
  cleanup(r);
  requests.erase(id);
  report();
}

namespace {

prefill_engine_actor::behavior_type prefill_engine(prefill_engine_actor::stateful_pointer<prefill_state> self,
                                                   engine_setup setup) {
  self->state.init(self, std::move(setup));
  return {
      [self](atom::assign, const envelope<schema::Assignments>& e) { self->state.on_assign(e); },
      [self](atom::tick) { self->state.try_pass(); },
      [self](atom::expire) { self->state.watch.on_expire(self); },
      [self](atom::cancel, uint64_t id) { self->state.cancel(id); },
      [self](atom::lost, uint32_t node) { self->state.node_lost(node); },
  };
}

}  // namespace

prefill_engine_actor spawn_prefill_engine(caf::actor_system& sys, engine_setup setup) {
  return sys.spawn(prefill_engine, std::move(setup));
}

// True (and the pass aborted) when a request's DE node rejoined as a new process since its assignment.
bool prefill_state::abort_if_stale() {
  for (const auto& e : pass->entries)
    if (!de_current(*e.req)) {
      abort_pass("DE node " + std::to_string(e.req->asg.de_node) + " was lost and has rejoined as a new process");
      return true;
    }
  return false;
}

}  // namespace dualpath::actors
