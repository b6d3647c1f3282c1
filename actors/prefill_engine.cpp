// Prefill engine: assignment -> hit KV into DRAM buffers (PE and/or DE node) -> layer-wise prefill passes
// under the compute quota -> per-layer forwarding into the DE node's buffer -> hand-off to the DE.
#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <optional>

#include "actors/engine_base.hpp"
#include "actors/runtime_messages.hpp"
#include "core/cost_model.hpp"
#include "schedule/batcher.hpp"

namespace dualpath::actors {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

using runtime::copy_op;
using runtime::region_kind;

struct pe_request {
  turn_payload payload;
  schedule::assignment asg;
  uint32_t hit = 0;               // hit blocks asked for
  uint32_t pe_blocks = 0;         // blocks [0, pe_blocks) come through the PE node
  uint32_t valid = 0;             // hit blocks that arrived intact
  uint32_t pe_valid = 0, de_valid = 0;  // per source, leading intact blocks
  std::vector<uint32_t> pe_slots; // PE buffer slots of blocks [0, pe_blocks)
  std::vector<uint32_t> de_slots; // DE buffer slot of every prompt block
  uint32_t pending = 0;
  std::string error;
  uint32_t corrupt = 0;
  std::optional<gpu::hbm_allocation> new_kv;  // [layer][token][bytes] for tokens [valid·bt, prompt)
  bool hit_forwarded = false;
  uint64_t kv_verified = 0, kv_corrupt = 0;

  uint64_t prompt() const { return payload.tokens.size(); }
};

struct pass_entry {
  pe_request* req;
  uint64_t cached, bsz;
  bool forward_hit;
};

struct pass_state {
  std::vector<pass_entry> entries;
  prefill_job_ptr job;
  uint32_t depth = 1;
  gpu::hbm_allocation staging;  // depth slots × Σ valid hit blocks × layer bytes
  uint64_t slot_bytes = 0;      // bytes of one staging slot
  std::vector<uint64_t> entry_stage;  // per entry: offset inside a staging slot
  uint32_t fetched_next = 0;    // next layer to fetch
  std::vector<bool> fetched;
  uint32_t computed = 0;        // layers computed
  bool computing = false;
  uint32_t forwards_pending = 0;
  std::vector<bool> slot_busy;  // staging slot still being forwarded
  bool started = false;
  bool finishing = false;
  int64_t began_ns = 0;
  int64_t compute_ns = 0;  // time the compute worker spent on this pass's layers
  int64_t layer_sent_ns = 0;
};

struct prefill_state : engine_base {
  static inline const char* name = "prefill_engine";
  std::unique_ptr<schedule::prefill_batcher> batcher;
  std::map<uint64_t, pe_request> requests;
  std::deque<schedule::prefill_work> ready;
  std::unique_ptr<pass_state> pass;

  void init(engine_actor::pointer s, engine_setup st) {
    bind(s, std::move(st));
    const auto fit = setup.backend->fit();
    const model_spec m = setup.backend->model();
    if (view().config.quota_scope == "forward") {
      // One GPU per engine: the whole forward pass is this engine's own time, not only its attention.
      batcher = std::make_unique<schedule::prefill_batcher>(
          [m, fit](uint64_t cached, uint64_t bsz) { return fit.seconds(prefill_flops(m, cached, bsz)); }, view().quota_s());
    } else {
      batcher = std::make_unique<schedule::prefill_batcher>(m, schedule::flops_fit{fit.fixed_s, fit.seconds_per_flop},
                                                            view().quota_s());
    }
    report();
  }

  void report() {
    uint64_t tok = 0;
    for (auto& [id, r] : requests) {
      // Until its tokens arrive a request counts what the scheduler was told it appends.
      tok += r.payload.tokens.empty() ? r.asg.request.append_tokens
                                      : r.prompt() - std::min<uint64_t>(r.prompt(), r.valid * geo().block_tokens);
    }
    self->send(view().leaders[node()], atom::engine_st_v, setup.engine, uint32_t(requests.size()), tok,
               hbm->free_bytes());
  }

  void fail(pe_request& r, const std::string& why) {
    answer_failure(r.payload, why);
    cleanup(r);
    requests.erase(r.payload.request);
    report();
  }

  // Frees what the request holds on this side. The DE buffer slots go back too unless the DE took them.
  void cleanup(pe_request& r, bool release_de = true) {
    auto send_release = [this](uint32_t node, const std::vector<uint32_t>& slots) {
      std::vector<uint32_t> real;
      for (auto s : slots)
        if (s != UINT32_MAX) real.push_back(s);
      if (!real.empty()) self->send(view().traffic_queues[node], atom::release_v, encode(slot_list{real, 0, {}}));
    };
    send_release(r.asg.pe_node, r.pe_slots);
    if (release_de) send_release(r.asg.de_node, r.de_slots);
    r.pe_slots.clear();
    r.de_slots.clear();
    if (r.new_kv) {
      hbm->free(*r.new_kv);
      r.new_kv.reset();
    }
  }

  // ---- assignment: fetch the tokens, then bring hit KV into the DRAM buffers ----
  void on_assign(const envelope<schema::Assignments>& e) {
    for (auto& a : decode(e)) {
      if (a.pe != setup.engine) continue;
      auto& r = requests[a.request.id];
      r.asg = a;
      r.payload.request = a.request.id;
      r.payload.agent = view().agent_of(a.request.id);
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
                if (it != requests.end()) fail(it->second, "client did not answer: " + caf::to_string(err));
              });
    }
    report();
  }

  void prepare(pe_request& r) {
    const auto& g = geo();
    const uint32_t blocks = g.blocks_for(r.prompt());
    const uint32_t max_hit = uint32_t((r.prompt() - 1) / g.block_tokens);  // at least one token to compute
    r.hit = std::min(r.payload.hit_blocks, max_hit);
    const bool oracle = view().policy == "oracle";
    switch (r.asg.path) {
      case schedule::read_path::pe: r.pe_blocks = r.hit; break;
      case schedule::read_path::de: r.pe_blocks = 0; break;
      case schedule::read_path::split: r.pe_blocks = std::min(r.asg.pe_blocks, r.hit); break;
    }
    if (oracle) r.pe_blocks = r.hit;
    std::vector<block_key> keys = block_keys(r.payload.tokens, g.block_tokens);
    keys.resize(r.hit);
    const uint64_t id = r.payload.request;
    r.pending = 0;
    auto finished = [this, id](const std::string& err) {
      auto it = requests.find(id);
      if (it == requests.end()) return;
      auto& q = it->second;
      if (!err.empty() && q.error.empty()) q.error = err;
      if (--q.pending > 0) return;
      if (!q.error.empty()) return fail(q, q.error);
      kv_ready(q);
    };
    // DE buffer: a slot for every block that does not arrive there from storage.
    const uint32_t de_read = r.hit - r.pe_blocks;
    r.de_slots.assign(blocks, UINT32_MAX);
    ++r.pending;
    self->request(view().traffic_queues[r.asg.de_node], timeout(), atom::reserve_v, blocks - de_read)
        .then(
            [this, id, finished](const envelope<schema::Slots>& e) {
              auto s = decode(e);
              auto it = requests.find(id);
              if (it != requests.end() && s.error.empty()) {
                auto& q = it->second;
                size_t k = 0;
                for (uint32_t b = 0; b < q.de_slots.size(); ++b)
                  if (b < q.pe_blocks || b >= q.hit) q.de_slots[b] = s.slots[k++];
              } else if (it != requests.end()) {
                self->send(view().traffic_queues[it->second.asg.de_node], atom::release_v, encode(slot_list{s.slots, 0, {}}));
              }
              finished(s.error);
            },
            [finished](caf::error& err) { finished("DE buffer reservation failed: " + caf::to_string(err)); });
    if (r.pe_blocks > 0) {
      ++r.pending;
      load_hit(r, r.asg.pe_node, {keys.begin(), keys.begin() + r.pe_blocks}, 0, finished);
    }
    if (de_read > 0) {
      ++r.pending;
      load_hit(r, r.asg.de_node, {keys.begin() + r.pe_blocks, keys.end()}, r.pe_blocks, finished);
    }
  }

  // Reads hit blocks [first, first + keys.size()) through `node`'s SNIC into its buffer. Blocks read on
  // the DE node are already where the DE needs them, so their slots join the request's DE buffer image.
  template <class Finished>
  void load_hit(pe_request& r, uint32_t node, std::vector<block_key> keys, uint32_t first, Finished finished) {
    const uint64_t id = r.payload.request;
    const bool on_pe = node == r.asg.pe_node && first == 0;
    self->request(view().traffic_queues[node], timeout(), atom::load_v, encode_load(keys))
        .then(
            [this, id, first, on_pe, finished](const envelope<schema::LoadResult>& e) {
              auto res = decode(e);
              auto it = requests.find(id);
              if (it != requests.end()) {
                auto& q = it->second;
                if (on_pe) {
                  q.pe_slots = res.slots;
                  q.pe_valid = res.valid;
                } else {
                  for (size_t k = 0; k < res.slots.size(); ++k) q.de_slots[first + k] = res.slots[k];
                  q.de_valid = res.valid;
                }
                if (!res.slots.empty() && res.valid < res.slots.size()) {
                  q.corrupt += 1;
                  spdlog::warn("engine {}: request {:x}: block {} unusable ({}), recomputing from there",
                               setup.engine, id, first + res.valid, res.error);
                }
              }
              // No slots at all means the read could not even start (e.g. the buffer is too small).
              finished(res.slots.empty() && !res.error.empty() ? res.error : "");
            },
            [finished, node](caf::error& err) {
              finished("KV read on node " + std::to_string(node) + " failed: " + caf::to_string(err));
            });
  }

  void kv_ready(pe_request& r) {
    // A miss from the first bad block on: blocks after it are recomputed, whatever path they took.
    r.valid = r.pe_valid < r.pe_blocks ? r.pe_valid : r.pe_blocks + r.de_valid;
    r.payload.times.kv_ready = now_ns();
    const uint64_t cached = uint64_t(r.valid) * geo().block_tokens;
    ready.push_back({r.payload.request, cached, r.prompt() - cached});
    report();
    try_pass();
  }

  // ---- forward passes ----
  void try_pass() {
    if (pass || ready.empty()) return;
    auto saved = ready;
    auto batch = batcher->next_batch(ready);
    auto p = std::make_unique<pass_state>();
    const auto& g = geo();
    const bool layerwise = view().policy != "basic";
    p->depth = layerwise ? std::min(view().config.prefetch_layers, g.layers) : g.layers;
    uint64_t hit_blocks = 0;
    std::vector<gpu::hbm_allocation> fresh;
    bool fits = true;
    for (auto& b : batch) {
      auto& r = requests.at(b.request);
      if (!r.new_kv) {
        const uint64_t bytes = (r.prompt() - uint64_t(r.valid) * g.block_tokens) * g.layers * g.bytes_per_token_layer;
        auto a = hbm->try_allocate(std::max<uint64_t>(bytes, 1));
        if (!a) {
          fits = false;
          break;
        }
        r.new_kv = a;
        fresh.push_back(*a);
      }
      p->entry_stage.push_back(hit_blocks * g.layer_bytes());
      hit_blocks += r.valid;
      p->entries.push_back({&r, b.cached, b.bsz, !r.hit_forwarded});
    }
    std::optional<gpu::hbm_allocation> staging;
    if (fits) {
      p->slot_bytes = std::max<uint64_t>(hit_blocks * g.layer_bytes(), 1);
      staging = hbm->try_allocate(p->slot_bytes * p->depth);
      fits = staging.has_value();
    }
    if (!fits) {
      for (auto& a : fresh) {
        hbm->free(a);
        for (auto& e : p->entries)
          if (e.req->new_kv && e.req->new_kv->offset == a.offset) e.req->new_kv.reset();
      }
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
    p->staging = *staging;
    p->fetched.assign(g.layers, false);
    p->slot_busy.assign(p->depth, false);
    p->job = std::make_shared<prefill_job>();
    const int64_t start = now_ns();
    for (auto& e : p->entries) {
      if (!e.req->payload.times.prefill_start) e.req->payload.times.prefill_start = start;
      gpu::prefill_item item;
      item.request_id = e.req->payload.request;
      item.cached = uint32_t(e.cached);
      item.tokens.assign(e.req->payload.tokens.begin() + e.cached, e.req->payload.tokens.begin() + e.cached + e.bsz);
      item.emit_token = e.cached + e.bsz == e.req->prompt();
      p->job->items.push_back(std::move(item));
    }
    pass = std::move(p);
    pass->began_ns = now_ns();
    self->request(setup.worker, caf::infinite, atom::start_v, pass->job)
        .then([this](const std::string& err) {
          if (!err.empty()) return abort_pass(err);
          pass->started = true;
          step();
        });
    for (uint32_t i = 0; i < pass->depth; ++i) fetch_layer();
  }

  uint64_t staging_offset(uint32_t layer, size_t entry, uint32_t block) const {
    return pass->staging.offset + (layer % pass->depth) * pass->slot_bytes + pass->entry_stage[entry] +
           uint64_t(block) * geo().layer_bytes();
  }

  // Hit Layer Blocks of layer `fetched_next` into its staging slot, from whichever node buffer holds them.
  void fetch_layer() {
    auto& p = *pass;
    if (p.fetched_next >= geo().layers) return;
    const uint32_t layer = p.fetched_next;
    if (p.slot_busy[layer % p.depth]) return;
    p.fetched_next++;
    const auto& g = geo();
    std::map<uint32_t, copy_batch> by_node;
    for (size_t k = 0; k < p.entries.size(); ++k) {
      auto& r = *p.entries[k].req;
      for (uint32_t b = 0; b < r.valid; ++b) {
        const bool from_pe = b < r.pe_blocks;
        const uint32_t src_node = from_pe ? r.asg.pe_node : r.asg.de_node;
        const uint32_t slot = from_pe ? r.pe_slots[b] : r.de_slots[b];
        copy_op op;
        op.via = from_pe ? setup.engine : r.asg.de;
        op.src_kind = region_kind::buffer;
        op.src_offset = view().slot_offset(slot) + layer * g.layer_bytes();
        op.dst_engine = setup.engine;
        op.dst_kind = region_kind::hbm;
        op.dst_offset = staging_offset(layer, k, b);
        op.length = g.layer_bytes();
        by_node[src_node].ops.push_back(op);
      }
    }
    if (by_node.empty()) {
      p.fetched[layer] = true;
      return;
    }
    auto remaining = std::make_shared<size_t>(by_node.size());
    for (auto& [n, batch] : by_node) {
      self->request(view().traffic_queues[n], timeout(), atom::copy_v, encode(batch))
          .then(
              [this, layer, remaining](const std::string& err) {
                if (!pass) return;
                if (!err.empty()) return abort_pass("hit KV transfer failed: " + err);
                if (--*remaining == 0) {
                  pass->fetched[layer] = true;
                  verify_staged(layer);
                  step();
                }
              },
              [this](caf::error& err) {
                if (pass) abort_pass("hit KV transfer timed out: " + caf::to_string(err));
              });
    }
  }

  // Modeled backend: every hit Layer Block is checked on arrival in HBM against the bytes its tokens imply.
  void verify_staged(uint32_t layer) {
    if (view().config.backend != "modeled") return;
    const auto& g = geo();
    for (size_t k = 0; k < pass->entries.size(); ++k) {
      auto& r = *pass->entries[k].req;
      for (uint32_t b = 0; b < r.valid; ++b) {
        const uint32_t first = b * g.block_tokens;
        ++r.kv_verified;
        if (!gpu::modeled_kv_matches(layer, first, r.payload.tokens.data() + first, g.block_tokens,
                                     hbm->base() + staging_offset(layer, k, b), uint32_t(g.bytes_per_token_layer)))
          ++r.kv_corrupt;
      }
    }
  }

  void step() {
    auto& p = *pass;
    const auto& g = geo();
    if (!p.started || p.computing || p.finishing) return;
    if (p.computed == g.layers) {
      if (p.forwards_pending == 0) finish_pass();
      return;
    }
    const uint32_t layer = p.computed;
    if (!p.fetched[layer]) return;
    auto in = std::make_shared<layer_inputs>();
    in->layer = layer;
    for (size_t k = 0; k < p.entries.size(); ++k) {
      auto& e = p.entries[k];
      auto& r = *e.req;
      std::vector<gpu::kv_span> spans;
      for (uint32_t b = 0; b < r.valid; ++b)
        spans.push_back({hbm->base() + staging_offset(layer, k, b), g.block_tokens});
      const uint64_t hit_tokens = uint64_t(r.valid) * g.block_tokens;
      const uint64_t new_tokens = r.prompt() - hit_tokens;
      std::byte* layer_base = r.new_kv->data + layer * new_tokens * g.bytes_per_token_layer;
      if (e.cached > hit_tokens) spans.push_back({layer_base, uint32_t(e.cached - hit_tokens)});
      in->cached.push_back(std::move(spans));
      in->new_kv.push_back(layer_base + (e.cached - hit_tokens) * g.bytes_per_token_layer);
    }
    p.computing = true;
    p.layer_sent_ns = now_ns();
    self->request(setup.worker, caf::infinite, atom::layer_v, p.job, in)
        .then([this, layer](const std::string& err) {
          if (!pass) return;
          if (!err.empty()) return abort_pass(err);
          pass->compute_ns += now_ns() - pass->layer_sent_ns;
          pass->computing = false;
          pass->computed = layer + 1;
          forward_layer(layer);
          step();
        });
  }

  // Layer `layer` to the DE buffer: hit KV too on the PE path (first pass only), new KV always.
  void forward_layer(uint32_t layer) {
    auto& p = *pass;
    const auto& g = geo();
    std::map<uint32_t, copy_batch> by_de;  // keyed by DE engine (the destination endpoint)
    for (size_t k = 0; k < p.entries.size(); ++k) {
      auto& e = p.entries[k];
      auto& r = *e.req;
      auto& batch = by_de[r.asg.de];
      if (e.forward_hit) {
        for (uint32_t b = 0; b < std::min(r.valid, r.pe_blocks); ++b) {
          batch.ops.push_back({setup.engine, region_kind::hbm, staging_offset(layer, k, b), r.asg.de, region_kind::buffer,
                               view().slot_offset(r.de_slots[b]) + layer * g.layer_bytes(), g.layer_bytes()});
        }
      }
      const uint64_t hit_tokens = uint64_t(r.valid) * g.block_tokens;
      const uint64_t new_tokens = r.prompt() - hit_tokens;
      const uint64_t layer_base = r.new_kv->offset + layer * new_tokens * g.bytes_per_token_layer;
      for (const auto& run : runtime::token_runs(g, e.cached, e.cached + e.bsz)) {
        batch.ops.push_back({setup.engine, region_kind::hbm, layer_base + (run.first - hit_tokens) * g.bytes_per_token_layer,
                             r.asg.de, region_kind::buffer,
                             view().slot_offset(r.de_slots[run.block]) + g.offset_in_block(layer, run.token_in_block),
                             uint64_t(run.count) * g.bytes_per_token_layer});
      }
    }
    p.slot_busy[layer % p.depth] = true;
    auto remaining = std::make_shared<size_t>(by_de.size());
    p.forwards_pending++;
    for (auto& [de, batch] : by_de) {
      self->request(view().traffic_queues[node()], timeout(), atom::copy_v, encode(batch))
          .then(
              [this, layer, remaining](const std::string& err) {
                if (!pass) return;
                if (!err.empty()) return abort_pass("KV forwarding to the DE failed: " + err);
                if (--*remaining > 0) return;
                pass->forwards_pending--;
                pass->slot_busy[layer % pass->depth] = false;
                fetch_layer();
                step();
              },
              [this](caf::error& err) {
                if (pass) abort_pass("KV forwarding timed out: " + caf::to_string(err));
              });
    }
  }

  void finish_pass() {
    pass->finishing = true;
    self->request(setup.worker, caf::infinite, atom::finish_v, pass->job).then([this](const std::string& err) {
      if (!err.empty()) return abort_pass(err);
      auto p = std::move(pass);
      hbm->free(p->staging);
      const int64_t t = now_ns();
      uint64_t tokens = 0;
      for (auto& e : p->entries) tokens += e.bsz;
      spdlog::debug("engine {}: pass of {} requests, {} tokens: {:.1f} ms, layers computing {:.1f} ms", setup.engine,
                    p->entries.size(), tokens, (t - p->began_ns) / 1e6, p->compute_ns / 1e6);
      for (size_t k = 0; k < p->entries.size(); ++k) {
        auto& e = p->entries[k];
        auto& r = *e.req;
        r.hit_forwarded = true;
        if (e.cached + e.bsz < r.prompt()) continue;  // chunked: the batcher keeps it at the queue head
        r.payload.times.first_token = t;
        handoff_info h;
        h.payload = r.payload;
        h.first_token = p->job->tokens[k];
        h.de_slots = r.de_slots;
        h.valid_hit_blocks = r.valid;
        h.path = uint8_t(r.asg.path);
        h.corrupt_blocks = r.corrupt;
        h.kv_verified = r.kv_verified;
        h.kv_corrupt = r.kv_corrupt;
        self->send(view().engines.at(r.asg.de), atom::handoff_v, encode(h));
        const uint64_t id = r.payload.request;
        cleanup(r, false);
        requests.erase(id);
      }
      report();
      try_pass();
    });
  }

  void abort_pass(const std::string& why) {
    auto p = std::move(pass);
    if (!p) return;
    hbm->free(p->staging);
    for (auto& e : p->entries) {
      auto it = requests.find(e.req->payload.request);
      if (it == requests.end()) continue;
      // The batcher may still hold the request (chunked): drop it from the queue too.
      ready.erase(std::remove_if(ready.begin(), ready.end(), [&](auto& w) { return w.request == it->first; }),
                  ready.end());
      it->second.error = why;
      fail(it->second, why);
    }
    try_pass();
  }
};

engine_actor::behavior_type prefill_engine(engine_actor::stateful_pointer<prefill_state> self, engine_setup setup) {
  self->state.init(self, std::move(setup));
  return {
      [=](atom::assign, const envelope<schema::Assignments>& e) { self->state.on_assign(e); },
      [=](atom::handoff, const envelope<schema::Handoff>&) {
        spdlog::error("prefill engine {} got a hand-off; ignored", self->state.setup.engine);
      },
      [=](atom::tick) { self->state.try_pass(); },
      [=](atom::persisted, uint64_t) {},
  };
}

}  // namespace

engine_actor spawn_prefill_engine(caf::actor_system& sys, engine_setup setup) {
  return sys.spawn(prefill_engine, std::move(setup));
}

}  // namespace dualpath::actors
