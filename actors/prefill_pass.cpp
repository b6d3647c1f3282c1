// Prefill engine, forward passes (docs/design.md §4, §7.6): a batch under the compute quota; per layer, its
// hit KV is staged into HBM (`depth` layers in flight), computed, and forwarded with the new KV to the DE
// buffer; after the last layer the first tokens are handed off to the decode engines. The fetches and
// forwards themselves are prefill_moves.cpp.
#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "actors/prefill_state.hpp"
#include "core/cost_model.hpp"
#include "core/progress.hpp"
#include "protocol/errors.hpp"

namespace dualpath::actors {

void prefill_state::try_pass() {
  if (pass || ready.empty()) return;
  auto saved = ready;
  // docs/design.md §7.6: the batch stops before its new KV and staging exceed the free HBM, so a request that
  // fits alone never fails because of its batch-mates.
  const schedule::hbm_budget budget{
      hbm->free_bytes(), [this](const schedule::prefill_work& w) {
        const auto& r = requests.at(w.request);
        const uint64_t fresh = r.new_kv ? 0 : runtime::new_kv_bytes(geo(), r.prompt(), r.src.valid);
        return fresh + runtime::plan_staging(geo(), {r.src.valid}, staging_depth()).bytes();
      }};
  auto batch = batcher->next_batch(ready, &budget);
  auto p = std::make_unique<pass_state>();
  bool fits = allocate_pass(*p, batch);
  if (!fits && batch.size() > 1) {
    // The free bytes are not one hole (first-fit arena, rounded allocations): the head alone may still fit.
    // It runs now, the others wait for the HBM.
    ready = saved;
    std::deque<schedule::prefill_work> head{ready.front()};
    batch = batcher->next_batch(head);
    if (head.empty()) ready.pop_front();
    else ready.front() = head.front();
    p = std::make_unique<pass_state>();
    fits = allocate_pass(*p, batch);
  }
  if (!fits) {
    ready = std::move(saved);
    if (hbm->allocations() == 0) {  // nothing else holds HBM: it will never fit
      auto& r = requests.at(ready.front().request);
      ready.pop_front();
      fail(r, "request does not fit in the HBM of engine " + std::to_string(setup.engine) + " (" +
                  std::to_string(hbm->capacity()) + " bytes)");
      try_pass();
    }
    return;  // retried when a pass ends or a request leaves
  }
  const auto& g = geo();
  p->fetched.assign(g.layers, false);
  p->job = std::make_shared<prefill_job>();
  const int64_t start = now_ns();
  const auto fit = setup.backend->fit();
  const model_spec m = setup.backend->model();
  double pass_s = 0;
  for (auto& e : p->entries) {
    if (!e.req->payload.times.prefill_start) e.req->payload.times.prefill_start = start;
    gpu::prefill_item item;
    item.request_id = e.req->payload.request;
    item.cached = uint32_t(e.cached);
    item.tokens.assign(e.req->payload.tokens.begin() + e.cached, e.req->payload.tokens.begin() + e.cached + e.bsz);
    item.emit_token = e.cached + e.bsz == e.req->prompt();
    item.sample = e.req->payload.sampling();
    p->job->items.push_back(std::move(item));
    pass_s += fit.seconds(prefill_flops(m, e.cached, e.bsz));
  }
  p->layer_expected_s = pass_s / std::max<uint32_t>(1, g.layers);
  pass = std::move(p);
  pass->seq = ++passes_begun;
  pass->began_ns = pass->phase_since = now_ns();
  pass->admissions_pending = setup.ep_group ? 2 : 1;
  ++pass->in_flight;
  watch.request(self, setup.worker, compute_timeout(pass->layer_expected_s), atom::start_v, pass->job)
      .then(
          [this](uint32_t) {
            if (returned()) admitted();
          },
          [this](caf::error& err) {
            if (returned()) abort_pass("prefill pass refused: " + describe(err));
          });
  for (uint32_t i = 0; i < pass->staging.depth; ++i) fetch_layer();
  ep_join();
}

uint32_t prefill_state::staging_depth() const {
  return view().mode.loading == kv_loading::layerwise ? view().config.prefetch_layers : geo().layers;
}

// New-KV space for every request of the batch that has none yet, and the staging area of the pass. All or
// nothing: on failure everything allocated here is freed again.
bool prefill_state::allocate_pass(pass_state& p, const std::vector<schedule::batch_entry>& batch) {
  const auto& g = geo();
  std::vector<gpu::hbm_allocation> fresh;
  std::vector<uint32_t> valid;
  bool fits = true;
  for (const auto& b : batch) {
    auto& r = requests.at(b.request);
    if (!r.new_kv) {
      auto a = hbm->try_allocate(runtime::new_kv_bytes(g, r.prompt(), r.src.valid));
      if (!a) {
        fits = false;
        break;
      }
      r.new_kv = a;
      fresh.push_back(*a);
    }
    valid.push_back(r.src.valid);
    p.entries.push_back({&r, b.cached, b.bsz, !r.hit_forwarded});
  }
  // The batch is sized for staging_depth() slots. Where the HBM it leaves free holds more (up to
  // spare_staging_layers more; `basic` already stages every layer), the pass takes them: a layer's fetch then
  // waits for the slot of a layer computed further back, so at a pass's start, where a fetch takes longer than
  // a layer computes, layer 2 is fetched once layer 0 has landed rather than once it has been computed
  // (docs/design.md §4, docs/experiments.md).
  // Fetches in flight stay at prefetch_layers.
  const uint32_t depth = std::min(g.layers, staging_depth());
  std::optional<gpu::hbm_allocation> staging;
  for (uint32_t d = std::min(g.layers, depth + view().config.spare_staging_layers); fits && !staging && d >= depth;
       --d) {
    auto layout = runtime::plan_staging(g, valid, d);
    if ((staging = hbm->try_allocate(layout.bytes()))) p.staging = std::move(layout);
  }
  fits = staging.has_value();
  if (!fits) {
    for (auto& a : fresh) {
      hbm->free(a);
      for (auto& e : p.entries)
        if (e.req->new_kv && e.req->new_kv->offset == a.offset) e.req->new_kv.reset();
    }
    return false;
  }
  p.staging_alloc = *staging;
  p.staging.base = staging->offset;
  return true;
}

void prefill_state::advance() {
  if (!pass) return;
  switch (pass->phase) {
    case pass_phase::waiting_kv:
    case pass_phase::computing:  // the worker may take the next layer before this one answers
      send_layers();
      return;
    case pass_phase::draining:
      if (pass->forwards_pending == 0) finish_pass();
      return;
    case pass_phase::admitting:  // the worker's or the EP group's answer moves it on (admitted)
    case pass_phase::finishing:  // the finish answer ends the pass
    case pass_phase::aborted:    // settle() frees it once nothing is in flight
      return;
  }
}

void prefill_state::admitted() {
  if (--pass->admissions_pending > 0) return;
  pass->enter(pass_phase::waiting_kv, now_ns());
  advance();
}

// A GPU's stream starts a layer's kernels the moment the previous layer's are done; here the worker is an actor,
// so a layer handed over only once the previous one answered would wait a round trip through the engine
// (two messages, on cores that the nodes' copies share). So a layer whose hit KV is staged goes to the worker
// while the layer before it still computes, and the worker starts it as soon as it is free. One ahead is
// enough to close the gap; the staging slots bound it anyway (layer l + 1's KV lands while l computes only
// when depth >= 2). Under ep_sync every layer ends at the group's barrier, so layers go one at a time.
void prefill_state::send_layers() {
  auto& p = *pass;
  const uint32_t ahead = setup.ep_group ? 1 : 2;
  while (p.sent < geo().layers && p.sent < p.computed + ahead && p.fetched[p.sent]) compute_layer(p.sent);
  const pass_phase now = p.sent > p.computed ? pass_phase::computing : pass_phase::waiting_kv;
  if (p.phase != now) p.enter(now, now_ns());
}

void prefill_state::compute_layer(uint32_t layer) {
  auto& p = *pass;
  const auto& g = geo();
  auto in = std::make_shared<layer_inputs>();
  in->layer = layer;
  for (size_t k = 0; k < p.entries.size(); ++k) {
    auto& e = p.entries[k];
    auto& r = *e.req;
    std::vector<gpu::kv_span> spans;
    for (uint32_t b = 0; b < r.src.valid; ++b)
      spans.push_back({hbm->base() + p.staging.offset(g, layer, k, b), g.block_tokens});
    const uint64_t hit_tokens = uint64_t(r.src.valid) * g.block_tokens;
    const uint64_t new_tokens = r.prompt() - hit_tokens;
    std::byte* layer_base = r.new_kv->data + layer * new_tokens * g.bytes_per_token_layer;
    if (e.cached > hit_tokens) spans.push_back({layer_base, uint32_t(e.cached - hit_tokens)});
    in->cached.push_back(std::move(spans));
    in->new_kv.push_back(layer_base + (e.cached - hit_tokens) * g.bytes_per_token_layer);
  }
  if (p.sent == p.computed) p.worker_since_ns = now_ns();  // the worker holds no other layer
  p.sent = layer + 1;
  ++p.in_flight;
  // The deadline counts from the send, so a layer sent ahead is allowed the one before it too.
  watch.request(self, setup.worker, compute_timeout(2 * p.layer_expected_s), atom::layer_v, p.job, in)
      .then(
          [this, layer](uint32_t) {
            if (!returned()) return;
            // The worker's own time on this layer; a layer sent ahead starts now.
            const int64_t t = now_ns(), took = t - pass->worker_since_ns;
            pass->worker_since_ns = t;
            pass->compute_ns += took;
            ep_barrier(layer, double(took) / 1e9);
          },
          [this, layer](caf::error& err) {
            if (returned()) abort_pass("layer " + std::to_string(layer) + " failed: " + describe(err));
          });
}

void prefill_state::layer_computed(uint32_t layer) {
  pass->computed = layer + 1;
  if (pass->computed == geo().layers) pass->enter(pass_phase::draining, now_ns());
  forward_layer(layer, runtime::forward_part::new_kv);
  fetch_layer();  // its staging slot is free now: the layer `depth` ahead goes into it
  advance();
}

// The pass ended at `t`: its phases into the process's timeline (core/pass_timeline.hpp) and the debug log.
void prefill_state::record_timeline(pass_state& p, int64_t t) {
  p.enter(pass_phase::aborted, t);  // closes the finishing phase; the pass is over either way
  pass_timeline::pass_record r;
  for (size_t i = 0; i < r.ms.size(); ++i) r.ms[i] = p.phase_ns[i] / 1e6;
  r.worker_ms = p.compute_ns / 1e6;
  r.requests = uint32_t(p.entries.size());
  for (auto& e : p.entries) r.tokens += e.bsz;
  r.fetches = p.fetches.round_trips();
  pass_timeline::process_log().record(r);
  progress::prefill_busy_ns().fetch_add(uint64_t(std::max<int64_t>(0, t - p.began_ns)), std::memory_order_relaxed);
  using pass_timeline::phase;
  spdlog::debug(
      "engine {}: pass of {} requests, {} tokens: {:.1f} ms, layers computing {:.1f} ms (admit {:.1f}, waiting "
      "for KV {:.1f}, computing {:.1f}, draining {:.1f}, finishing {:.1f}); fetch round trips {:.2f} ms from its "
      "node, {:.2f} ms from others, layer 0 {:.2f} ms (-1: none)",
      setup.engine, r.requests, r.tokens, (t - p.began_ns) / 1e6, r.worker_ms, r.ms[size_t(phase::admit)],
      r.ms[size_t(phase::wait_kv)], r.ms[size_t(phase::compute)], r.ms[size_t(phase::drain)],
      r.ms[size_t(phase::finish)], r.fetches.own_ms, r.fetches.other_ms, r.fetches.first_ms);
}

void prefill_state::finish_pass() {
  pass->enter(pass_phase::finishing, now_ns());
  ++pass->in_flight;
  watch.request(self, setup.worker, compute_timeout(pass->layer_expected_s), atom::finish_v, pass->job)
      .then(
          [this](uint32_t) {
            if (!returned()) return;
            auto p = std::move(pass);
            hbm->free(p->staging_alloc);
            const int64_t t = now_ns();
            record_timeline(*p, t);
            hand_off(*p, t);
            report();
            try_pass();
            // No next pass: the group's next EP round need not wait for this engine.
            if (!pass && setup.ep_group) self->send(setup.ep_group, atom::idle_v, setup.engine);
          },
          [this](caf::error& err) {
            if (returned()) abort_pass("prefill pass could not finish: " + describe(err));
          });
}

// Every request whose prompt this pass completed goes to its decode engine with its first token.
void prefill_state::hand_off(pass_state& p, int64_t first_token_ns) {
  for (size_t k = 0; k < p.entries.size(); ++k) {
    auto& e = p.entries[k];
    auto& r = *e.req;
    r.hit_forwarded = true;
    if (r.cancelled) {
      drop_cancelled(r);
      continue;
    }
    if (e.cached + e.bsz < r.prompt()) continue;  // chunked: the batcher keeps it at the queue head
    r.payload.times.first_token = first_token_ns;
    stream_tokens(self, r.payload, 0, {p.job->tokens[k]}, r.src.valid);
    handoff_info h;
    h.payload = r.payload;
    h.first_token = p.job->tokens[k];
    h.de_slots = r.src.de_slots;
    h.valid_hit_blocks = r.src.valid;
    h.path = r.asg.path;
    h.corrupt_blocks = r.corrupt;
    h.kv_verified = r.kv_verified;
    h.kv_corrupt = r.kv_corrupt;
    if (de_current(r)) self->send(view().decode_engine(r.asg.de), atom::handoff_v, encode(h));
    else  // the new process never reserved these slots: the turn is re-run (§13)
      answer_failure(self, r.payload, "DE node " + std::to_string(r.asg.de_node) + " was lost and has rejoined");
    const uint64_t id = r.payload.request;
    cleanup(r, false);
    requests.erase(id);
  }
}

// The pass failed: its turns are answered at once, but what they hold (HBM, buffer slots) is only given
// back once every request of the pass has answered (settle), since copies may still be landing in it.
void prefill_state::abort_pass(const std::string& why, failure_kind kind) {
  if (!pass || pass->aborted()) return;
  pass->enter(pass_phase::aborted, now_ns());
  // Out of its EP round, so the others' layers go on (its own waits there fail and settle this pass).
  if (setup.ep_group) self->send(setup.ep_group, atom::leave_v, setup.engine);
  for (auto& e : pass->entries) {
    auto it = requests.find(e.req->payload.request);
    if (it == requests.end()) continue;
    unqueue(it->first);  // the batcher may still hold it (chunked)
    answer_failure(self, it->second.payload, why, kind);
  }
  settle();
}

bool prefill_state::returned() {
  if (!pass) return false;
  --pass->in_flight;
  if (!pass->aborted()) return true;
  settle();
  return false;
}

bool prefill_state::fetch_returned(uint64_t seq, uint32_t node) {
  if (!pass || pass->seq != seq || pass->written_off.count(node)) return false;
  --pass->fetching_from[node];
  return returned();
}

void prefill_state::pass_node_lost(uint32_t node) {
  if (!pass) return;
  auto it = pass->fetching_from.find(node);
  const bool fetching = it != pass->fetching_from.end() && it->second > 0;
  if (!fetching && pass->pulling_from.count(node) == 0) return;
  if (fetching) {
    // Its process is gone (the launcher killed it if it hung), and the transport refuses its peer: none of
    // these copies lands, so the pass's memory may be freed without them.
    pass->in_flight -= it->second;
    it->second = 0;
    pass->written_off.insert(node);
    if (pass->aborted()) return settle();
  }
  // Reads of its buffer by this node are answered here (failed once the transport marks the peer down), so
  // they stay in flight until then: the pass's memory is freed after them.
  if (pass->aborted()) return;
  abort_pass("node " + std::to_string(node) + " was lost while this pass read hit KV from it");
}

void prefill_state::settle() {
  if (!pass || !pass->aborted() || pass->in_flight > 0) return;
  auto p = std::move(pass);
  hbm->free(p->staging_alloc);
  for (auto& e : p->entries) {
    auto it = requests.find(e.req->payload.request);
    if (it == requests.end()) continue;
    cleanup(it->second);
    requests.erase(it);
  }
  report();
  try_pass();
}

}  // namespace dualpath::actors
