// Decode engine: takes prefilled requests from its node's DE buffer into HBM, decodes every request it
// holds in one batch per step, persists each Full Block as it fills, and answers the agent client.
#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "actors/cancelled_ids.hpp"
#include "actors/decode_request.hpp"
#include "actors/engine_base.hpp"
#include "core/cost_model.hpp"
#include "protocol/errors.hpp"
#include "protocol/runtime_codec.hpp"

namespace dualpath::actors {

namespace {

using runtime::copy_op;
using runtime::region_kind;

struct decode_state : engine_base {
  static inline const char* name = "decode_engine";
  decode_engine_actor::pointer self = nullptr;
  std::deque<handoff_info> waiting;  // prefilled, waiting for HBM
  std::map<uint64_t, de_request> active;
  std::map<uint64_t, uint64_t> admitting;  // id -> tokens it will hold: its KV is on the way into HBM
  bool stepping = false;
  gpu::hbm_allocation collective;  // model-class traffic of each decode step (docs/design.md §8)
  // A turn is answered only once its blocks are in storage, so the agent's next turn can hit them.
  std::map<uint64_t, uint32_t> persists_pending;
  std::map<uint64_t, turn_result> answered_when_persisted;
  // docs/design.md §18: cancelled while their HBM load or a decode step was in flight (dropped when it
  // returns), and cancelled before their hand-off arrived.
  std::set<uint64_t> cancelled;
  cancelled_ids cancelled_early;

  void init(decode_engine_actor::pointer s, engine_setup st) {
    self = s;
    bind(std::move(st));
    if (view().model_traffic_bytes() > 0) {
      // Taken first, so it sits at offset 0 of every decode engine's arena: peers know where to write.
      collective = hbm->allocate(view().model_traffic_bytes());
      if (collective.offset != 0) throw std::logic_error("collective buffer must be the arena's first allocation");
    }
    report();
  }

  // The next decode engine (cyclic, over the nodes decoding now: adaptive P/D changes them, docs/design.md
  // §7.9): the peer of this engine's emulated all-to-all.
  uint32_t collective_peer() const { return view().next_decode_engine(setup.engine); }

  // A decode engine learns of a request at hand-off: from then on its numbers count it, and the ids say
  // so, which ends the scheduler's charges for it (docs/design.md §7.1).
  void report() {
    uint64_t tok = 0;
    std::vector<uint64_t> ids;
    ids.reserve(waiting.size() + admitting.size() + active.size());
    for (auto& w : waiting) {
      tok += w.payload.tokens.size() + w.payload.gen;
      ids.push_back(w.payload.request);
    }
    for (auto& [id, t] : admitting) {
      tok += t;
      ids.push_back(id);
    }
    for (auto& [id, r] : active) {
      tok += r.sequence.size() + r.info.payload.gen - r.generated.size();
      ids.push_back(id);
    }
    self->send(view().leader(node()), atom::engine_st_v, setup.engine,
               uint32_t(waiting.size() + active.size() + admitting.size()), tok, hbm->free_bytes(), std::move(ids));
  }

  // The hand-off's slots are the prefill engine's until this engine adopts them from its node's traffic
  // queue: if that engine's process died meanwhile, they went back to the buffer (docs/design.md §13).
  void on_handoff(const envelope<schema::Handoff>& e) {
    auto h = std::make_shared<handoff_info>(decode(e));
    h->payload.times.handoff = now_ns();
    const auto from = caf::actor_cast<caf::actor_addr>(self->current_sender());
    if (!from || from.node() == self->node()) return adopted(std::move(*h), true);  // one process: no one dies alone
    watch
        .request(self, view().traffic_queue(node()), data_plane_timeout(), atom::adopt_v,
                 encode(slot_list{h->de_slots, 0}), from)
        .then([this, h](bool kept) { adopted(std::move(*h), kept); },
              [this, h](caf::error& err) {
                release_de_slots(*h);
                reply_error(*h, "the hand-off's slots were not taken over: " + describe(err), kind_of(err));
              });
  }
  void adopted(handoff_info h, bool kept) {
    if (!kept)  // the turn is re-run (its prefill node was lost); the slots are no longer this turn's
      return reply_error(h, "its prefill engine went down before the hand-off was taken", failure_kind::transient);
    if (cancelled_early.take(h.payload.request)) return release_de_slots(h);
    waiting.push_back(std::move(h));
    admit();
  }

  void cancel(uint64_t id) {
    const auto w = std::find_if(waiting.begin(), waiting.end(), [&](const auto& h) { return h.payload.request == id; });
    if (w != waiting.end()) {
      release_de_slots(*w);
      waiting.erase(w);
      return admit();
    }
    const auto a = active.find(id);
    if (admitting.count(id) || (a != active.end() && stepping)) {
      cancelled.insert(id);  // the copy or step in flight reads its memory: dropped when it returns
      return;
    }
    if (a == active.end()) return cancelled_early.add(id);
    hbm->free(a->second.pages);
    active.erase(a);
    admit();
  }

  // Requests cancelled during the step that just ended.
  void drop_cancelled() {
    for (auto it = cancelled.begin(); it != cancelled.end();) {
      const auto a = active.find(*it);
      if (a != active.end()) {
        hbm->free(a->second.pages);
        active.erase(a);
      }
      it = admitting.count(*it) ? std::next(it) : cancelled.erase(it);
    }
  }

  // FIFO admission: the head waits until its KV fits in HBM (backpressure, nothing dropped).
  void admit() {
    const auto& g = geo();
    while (!waiting.empty()) {
      auto& h = waiting.front();
      const uint64_t bytes = runtime::decode_hbm_bytes(g, h.payload.tokens.size(), h.payload.gen);
      if (bytes > hbm->capacity()) {
        auto info = std::move(waiting.front());
        waiting.pop_front();
        release_de_slots(info);
        reply_error(info, "request needs " + std::to_string(bytes) + " bytes of HBM, decode engine " +
                              std::to_string(setup.engine) + " has " + std::to_string(hbm->capacity()));
        continue;
      }
      auto pages = hbm->try_allocate_each(uint32_t(bytes / g.block_bytes()), g.block_bytes());
      if (!pages) break;
      de_request r;
      r.info = std::move(waiting.front());
      waiting.pop_front();
      r.pages = std::move(*pages);
      load_into_hbm(std::move(r));
    }
    report();
  }

  void release_de_slots(const handoff_info& h) {
    self->send(view().traffic_queue(node()), atom::release_v, encode(slot_list{h.de_slots, 0}));
  }

  void reply_error(const handoff_info& h, const std::string& why, failure_kind kind = failure_kind::fatal) {
    answer_failure(self, h.payload, why, kind);
  }

  // DE buffer -> DE HBM through this engine's own CNIC (loopback), one Full Block per slot.
  void load_into_hbm(de_request r) {
    copy_batch batch{runtime::plan_hbm_load(geo(), slots(), setup.engine, r.info.de_slots, page_offsets(r))};
    admitting[r.info.payload.request] = r.info.payload.tokens.size() + r.info.payload.gen;
    auto shared = std::make_shared<de_request>(std::move(r));
    copy_from(
        self, node(), std::move(batch),
        [this, shared](uint64_t) {
          admitting.erase(shared->info.payload.request);
          release_de_slots(shared->info);
          if (cancelled.erase(shared->info.payload.request) > 0) {
            hbm->free(shared->pages);
            return admit();
          }
          start_decoding(std::move(*shared));
        },
        [this, shared](caf::error& err) {
          admitting.erase(shared->info.payload.request);
          cancelled.erase(shared->info.payload.request);
          release_de_slots(shared->info);
          hbm->free(shared->pages);
          reply_error(shared->info, "DE buffer to HBM copy failed: " + describe(err), kind_of(err));
          admit();
        });
  }

  void start_decoding(de_request r) {
    const auto& g = geo();
    r.info.payload.times.in_hbm = now_ns();
    r.sequence = r.info.payload.tokens;
    r.position = uint32_t(r.sequence.size());
    if (view().config.backend == backend_kind::modeled) verify_arrived(r, g);
    // Prompt blocks that were not hits are complete now: persist them (keyed there) for the next turn.
    r.persisted_upto = r.info.valid_hit_blocks;
    persist_full_blocks(r);
    r.generated.push_back(r.info.first_token);
    r.sequence.push_back(r.info.first_token);
    const uint64_t id = r.info.payload.request;
    if (turn_over(r)) {
      complete(r);
      return admit();
    }
    active.emplace(id, std::move(r));
    report();
    step();
  }

  void persist_full_blocks(de_request& r) {
    key_full_blocks(r, geo());
    for (; r.persisted_upto < r.keys.size(); ++r.persisted_upto) {
      const uint32_t b = r.persisted_upto;
      const uint64_t id = r.info.payload.request;
      ++persists_pending[id];
      auto me = caf::actor_cast<decode_engine_actor>(self);
      setup.node->persist(r.keys[b], b == 0 ? 0 : r.keys[b - 1], r.pages.at(b).data,
                          [me, id] { caf::anon_send(me, atom::persisted_v, id); });
    }
  }

  void step() {
    if (stepping || active.empty()) return;
    const auto& g = geo();
    auto job = std::make_shared<decode_job>();
    std::vector<uint64_t> ids;
    job->new_kv.resize(std::min<size_t>(active.size(), view().config.max_decode_batch) * g.layers *
                       g.bytes_per_token_layer);
    for (auto& [id, r] : active) {
      if (ids.size() >= view().config.max_decode_batch) break;
      gpu::decode_item item;
      item.request_id = id;
      item.token = r.sequence.back();
      item.position = r.position;
      item.sample = r.info.payload.sampling();
      extend_spans(r, g);
      item.kv = std::move(r.spans);  // back in finish_step
      item.new_kv = job->new_kv.data() + ids.size() * g.layers * g.bytes_per_token_layer;
      job->items.push_back(std::move(item));
      ids.push_back(id);
    }
    stepping = true;
    // A step ends when its compute and, if emulated, its model traffic (the all-to-all) both finished.
    auto pending = std::make_shared<int>(view().model_traffic_bytes() > 0 ? 2 : 1);
    auto error = std::make_shared<std::string>();
    auto done = [this, job, ids, pending, error](const std::string& err) {
      if (!err.empty() && error->empty()) *error = err;
      if (--*pending == 0) finish_step(*job, ids, *error);
    };
    watch.request(self, setup.worker, compute_timeout(expected_step_s(*job)), atom::decode_v, job)
        .then([done](uint32_t) { done(""); }, [done](caf::error& err) { done(describe(err)); });
    if (view().model_traffic_bytes() > 0) {
      copy_batch batch;
      batch.traffic = transport::traffic_class::model;
      batch.ops.push_back({setup.engine, region_kind::hbm, collective.offset, collective_peer(), region_kind::hbm, 0,
                           view().model_traffic_bytes()});
      copy_from(
          self, node(), std::move(batch), [done](uint64_t) { done(""); },
          [done](caf::error& err) { done("model traffic failed: " + describe(err)); });
    }
  }

  // What the cost model expects one decode step of `job` to take (its compute deadline).
  double expected_step_s(const decode_job& job) const {
    const auto fit = setup.backend->fit();
    const model_spec m = setup.backend->model();
    double flops = 0;
    for (const auto& item : job.items) flops += prefill_flops(m, item.position, 1);
    return fit.seconds(flops);
  }

  void finish_step(decode_job& job, const std::vector<uint64_t>& ids, const std::string& err) {
    stepping = false;
    const auto& g = geo();
    const int64_t t = now_ns();
    for (size_t k = 0; k < ids.size(); ++k) {
      auto it = active.find(ids[k]);
      if (it == active.end() || cancelled.count(ids[k])) continue;
      auto& r = it->second;
      r.spans = std::move(job.items[k].kv);  // still over the first `spans_tokens` tokens
      if (!err.empty()) {
        reply_error(r.info, "decode step failed: " + err);
        hbm->free(r.pages);
        active.erase(it);
        continue;
      }
      append_token_kv(r, g, job.items[k].new_kv);
      persist_full_blocks(r);
      r.generated.push_back(job.tokens[k]);
      r.sequence.push_back(job.tokens[k]);
      if (r.generated.size() == 2) r.info.payload.times.second_token = t;
      stream_tokens(self, r.info.payload, uint32_t(r.generated.size() - 1), {job.tokens[k]}, r.info.valid_hit_blocks);
      if (turn_over(r)) {
        complete(r);
        active.erase(it);
      }
    }
    drop_cancelled();
    admit();
    step();
  }

  void complete(de_request& r) {
    turn_result res = result_of(r, now_ns());
    hbm->free(r.pages);
    const uint64_t id = res.request;
    if (persists_pending[id] == 0) return answer(res);
    answered_when_persisted[id] = std::move(res);
  }

  void on_persisted(uint64_t id) {
    if (--persists_pending[id] > 0) return;
    persists_pending.erase(id);  // a cancelled turn is never answered: nothing is left of it here
    auto it = answered_when_persisted.find(id);
    if (it == answered_when_persisted.end()) return;
    answer(it->second);
    answered_when_persisted.erase(it);
  }

  void answer(turn_result& res) {
    persists_pending.erase(res.request);
    res.times.done = now_ns();
    self->send(view().clients.at(res.agent), atom::result_v, encode(res));
  }
};

decode_engine_actor::behavior_type decode_engine(decode_engine_actor::stateful_pointer<decode_state> self,
                                                 engine_setup setup) {
  self->state.init(self, std::move(setup));
  return {
      [self](atom::handoff, const envelope<schema::Handoff>& e) { self->state.on_handoff(e); },
      [self](atom::tick) { self->state.step(); },
      [self](atom::expire) { self->state.watch.on_expire(self); },
      [self](atom::persisted, uint64_t id) { self->state.on_persisted(id); },
      [self](atom::cancel, uint64_t id) { self->state.cancel(id); },
  };
}

}  // namespace

decode_engine_actor spawn_decode_engine(caf::actor_system& sys, engine_setup setup) {
  return sys.spawn(decode_engine, std::move(setup));
}

}  // namespace dualpath::actors
