#pragma once
// Engine tests under CAF's test coordinator: the real prefill/decode engines against fake neighbours (a
// traffic queue per node, a compute worker per engine, leaders, one agent client, a decode engine). Every
// fake records what it receives and answers as its script says: now, later on command (held), or with an
// error. Held requests are answered from inside the fake (through atom::complete), so the engine sees a
// reply from the right actor. Nothing sleeps and nothing depends on wall-clock speed.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "actors/engines.hpp"
#include "core/block_key.hpp"
#include "gpu/backend.hpp"
#include "protocol/errors.hpp"
#include "protocol/runtime_codec.hpp"
#include "protocol/scheduler_codec.hpp"
#include "runtime/kv_plan.hpp"
#include "storage/block_store.hpp"

// Vectors in failure messages as [a, b, c] instead of {?}.
namespace doctest {
template <class T>
struct StringMaker<std::vector<T>> {
  static String convert(const std::vector<T>& v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::string(toString(v[i]).c_str());
    return String((out + "]").c_str());
  }
};
}  // namespace doctest

namespace engine_test {

using namespace dualpath;
using namespace dualpath::actors;
namespace fs = std::filesystem;

enum class answer { now, hold, fail };

// ---- traffic queue ----
struct copy_call {
  copy_batch batch;
  caf::typed_response_promise<uint64_t> promise;
  bool done = false;  // answered (at once, or later on command)
};

struct tq_script {
  answer copy = answer::now, reserve = answer::now, load = answer::now;
  std::string why = "injected fault";
  uint32_t next_slot = 0;  // slots handed out by reserve and load, counting up
  std::vector<std::vector<block_key>> loads;
  std::vector<uint32_t> reserves;
  std::vector<uint32_t> released;  // every slot given back, in order
  std::vector<copy_call> copies;

  std::vector<uint32_t> take(size_t n) {
    std::vector<uint32_t> s;
    for (size_t i = 0; i < n; ++i) s.push_back(next_slot++);
    return s;
  }
};

inline uint64_t batch_bytes(const copy_batch& b) {
  uint64_t n = 0;
  for (auto& op : b.ops) n += op.length;
  return n;
}

inline traffic_queue_actor::behavior_type fake_traffic_queue(traffic_queue_actor::pointer self,
                                                             std::shared_ptr<tq_script> s) {
  return {
      [=](atom::load, const envelope<schema::LoadBlocks>& e) -> caf::result<envelope<schema::LoadResult>> {
        auto keys = decode(e);
        s->loads.push_back(keys);
        if (s->load == answer::fail) return make_failure(errc::unavailable, s->why);
        runtime::load_result r;
        r.slots = s->take(keys.size());
        r.valid = uint32_t(keys.size());
        return encode(r);
      },
      [=](atom::reserve, uint32_t n) -> caf::result<envelope<schema::Slots>> {
        s->reserves.push_back(n);
        if (s->reserve == answer::fail) return make_failure(errc::capacity, s->why);
        return encode(slot_list{s->take(n), n});
      },
      [=](atom::release, const envelope<schema::Slots>& e) {
        for (auto x : decode(e).slots) s->released.push_back(x);
      },
      [=](atom::copy, const envelope<schema::CopyBatch>& e) -> caf::result<uint64_t> {
        copy_call c;
        c.batch = decode(e);
        c.done = s->copy != answer::hold;
        if (s->copy == answer::fail) {
          s->copies.push_back(c);
          return make_failure(errc::transfer, s->why);
        }
        if (s->copy == answer::now) {
          s->copies.push_back(c);
          return batch_bytes(c.batch);
        }
        c.promise = self->make_response_promise<uint64_t>();
        s->copies.push_back(c);
        return c.promise;
      },
      [](atom::complete, completion_ptr f) { (*f)(); },
  };
}

// ---- compute worker ----
enum class work { start, layer, finish, decode };

struct compute_call {
  work kind = work::start;
  uint32_t layer = 0;
  std::vector<uint64_t> ids;  // request of each item
  uint32_t value = 0;         // the answer when it succeeds
  caf::typed_response_promise<uint32_t> promise;
  bool done = false;
};

struct compute_script {
  answer start = answer::now, layer = answer::now, finish = answer::now, decode = answer::now;
  std::string why = "injected kernel fault";
  std::vector<compute_call> calls;

  // The tokens the fake produces: the first token of a request, and a decode step's token at a position.
  static int32_t first_token(uint64_t id) { return int32_t(7000 + id); }
  static int32_t decode_token(uint32_t position) { return int32_t(1000 + position); }
  std::vector<uint32_t> layers() const {
    std::vector<uint32_t> out;
    for (auto& c : calls)
      if (c.kind == work::layer) out.push_back(c.layer);
    return out;
  }
  size_t count(work k) const {
    size_t n = 0;
    for (auto& c : calls) n += c.kind == k;
    return n;
  }
};

// The worker's interface plus a hook to run a closure inside it (to answer a held request).
using fake_compute_actor = compute_actor::extend<caf::reacts_to<atom::complete, completion_ptr>>;

inline fake_compute_actor::behavior_type fake_compute(fake_compute_actor::pointer self,
                                                      std::shared_ptr<compute_script> s) {
  auto reply = [self, s](answer a, compute_call c) -> caf::result<uint32_t> {
    c.done = a != answer::hold;
    if (a == answer::hold) c.promise = self->make_response_promise<uint32_t>();
    s->calls.push_back(c);
    if (a == answer::fail) return make_failure(errc::compute, s->why);
    if (a == answer::now) return c.value;
    return s->calls.back().promise;
  };
  return {
      [=](atom::start, prefill_job_ptr job) {
        compute_call c;
        for (auto& it : job->items) c.ids.push_back(it.request_id);
        c.value = uint32_t(job->items.size());
        return reply(s->start, c);
      },
      [=](atom::layer, prefill_job_ptr job, layer_inputs_ptr in) {
        compute_call c;
        c.kind = work::layer;
        c.layer = in->layer;
        for (auto& it : job->items) c.ids.push_back(it.request_id);
        c.value = in->layer;
        return reply(s->layer, c);
      },
      [=](atom::finish, prefill_job_ptr job) {
        compute_call c;
        c.kind = work::finish;
        job->tokens.clear();
        for (auto& it : job->items) {
          c.ids.push_back(it.request_id);
          job->tokens.push_back(it.emit_token ? compute_script::first_token(it.request_id) : -1);
        }
        c.value = uint32_t(job->items.size());
        return reply(s->finish, c);
      },
      [=](atom::decode, decode_job_ptr job) {
        compute_call c;
        c.kind = work::decode;
        job->tokens.clear();
        for (auto& it : job->items) {
          c.ids.push_back(it.request_id);
          job->tokens.push_back(compute_script::decode_token(it.position));
        }
        c.value = uint32_t(job->items.size());
        return reply(s->decode, c);
      },
      [](atom::complete, completion_ptr f) { (*f)(); },
  };
}

// ---- leader, agent client, decode engine: recorders ----
struct engine_report {
  uint32_t engine = 0, seq = 0;
  uint64_t tok = 0, free_hbm = 0;
};
struct recorder {
  std::vector<engine_report> reports;
  std::vector<turn_payload> turns;  // what the client hands out, by request id
  std::vector<uint64_t> turn_asks;
  std::vector<turn_result> results;
  std::vector<handoff_info> handoffs;
};

inline leader_actor::behavior_type fake_leader(std::shared_ptr<recorder> r) {
  return {
      [=](atom::engine_st, uint32_t e, uint32_t seq, uint64_t tok, uint64_t hbm) {
        r->reports.push_back({e, seq, tok, hbm});
      },
      [](atom::tick) {},
  };
}

inline client_actor::behavior_type fake_client(std::shared_ptr<recorder> r) {
  return {
      [=](atom::turn, uint64_t id) -> caf::result<envelope<schema::TurnPayload>> {
        r->turn_asks.push_back(id);
        for (auto& p : r->turns)
          if (p.request == id) return encode(p);
        return make_failure(errc::not_found, "no such turn");
      },
      [=](atom::result, const envelope<schema::TurnResult>& e) { r->results.push_back(decode(e)); },
      [](atom::start) {},
  };
}

inline decode_engine_actor::behavior_type fake_decode_engine(std::shared_ptr<recorder> r) {
  return {
      [=](atom::handoff, const envelope<schema::Handoff>& e) { r->handoffs.push_back(decode(e)); },
      [](atom::tick) {},
      [](atom::persisted, uint64_t) {},
  };
}

// ---- the fixture: node 0 holds prefill engine 0, node 1 decode engine 1 ----
struct engine_fixture {
  static constexpr uint32_t pe_id = 0, de_id = 1;
  static inline int instances = 0;

  // The data plane (HBM arenas) outlives the actor system.
  fs::path dir = fs::temp_directory_path() /
                 ("dualpath-engine-test-" + std::to_string(getpid()) + "-" + std::to_string(instances++));
  runtime::kv_geometry geo{4, 16, 256};  // the tiny model: 4 layers, 16-token blocks, 4 KiB Layer Blocks
  std::unique_ptr<storage::block_store> store;
  std::unique_ptr<runtime::node_io> io[2];

  caf::actor_system_config cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  caf::scheduler::test_coordinator& sched;

  cluster_config config;
  cluster_view_ptr view = std::make_shared<cluster_view>();
  std::shared_ptr<tq_script> tq_s[2] = {std::make_shared<tq_script>(), std::make_shared<tq_script>()};
  std::shared_ptr<compute_script> pe_cs = std::make_shared<compute_script>(), de_cs = std::make_shared<compute_script>();
  std::shared_ptr<recorder> rec = std::make_shared<recorder>();
  traffic_queue_actor tq[2];
  fake_compute_actor pe_worker, de_worker;
  prefill_engine_actor pe;
  decode_engine_actor de;
  std::vector<caf::actor> spawned;

  static caf::actor_system_config& init(caf::actor_system_config& c) {
    c.set("scheduler.policy", caf::atom("testing"));
    c.set("logger.file-verbosity", caf::atom("quiet"));
    c.set("logger.console-verbosity", caf::atom("quiet"));
    c.add_message_types<caf::id_block::dualpath>();
    return c;
  }

  engine_fixture() : sys(init(cfg)), self(sys, true), sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {
    fs::remove_all(dir);
    storage::store_options o;
    o.dir = dir.string();
    o.format = {42, geo.layers, geo.block_tokens, uint32_t(geo.bytes_per_token_layer)};
    o.fsync = false;
    store = storage::block_store::open(o);
    config.prefill_nodes = 1;
    config.decode_nodes = 1;
    config.engines_per_node = 1;
    config.prefetch_layers = 2;
    tq_s[0]->next_slot = 3;   // PE buffer slots: 3, 4, ...
    tq_s[1]->next_slot = 10;  // DE buffer slots: 10, 11, ...
  }

  ~engine_fixture() {
    // Held promises hold their actors: drop them before the actors exit.
    for (auto& t : tq_s) t->copies.clear();
    pe_cs->calls.clear();
    de_cs->calls.clear();
    for (auto& a : spawned) self->send_exit(a, caf::exit_reason::user_shutdown);
    sched.run();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  template <class Handle>
  Handle keep(Handle h) {
    spawned.push_back(caf::actor_cast<caf::actor>(h));
    return h;
  }

  // Builds both nodes' data plane (HBM of `pe_hbm` / `de_hbm` bytes), the fakes and the engines: the real
  // prefill engine always, the real decode engine if `real_decode` (else a recorder takes the hand-offs).
  void start(uint64_t pe_hbm, uint64_t de_hbm, bool real_decode) {
    for (uint32_t n = 0; n < 2; ++n) {
      runtime::node_io_options o;
      o.node = n;
      o.engines = {n};
      o.geometry = geo;
      o.buffer_bytes = 4 * store->read_buffer_bytes();
      o.hbm_bytes = n == 0 ? pe_hbm : de_hbm;
      io[n] = std::make_unique<runtime::node_io>(o, *store);
    }
    auto& v = *view;
    v.geometry = geo;
    v.slot_stride = store->read_buffer_bytes();
    v.payload_offset = store->payload_offset();
    v.config = config;
    v.vocab = 512;
    v.store = store.get();
    v.prefill_engines.resize(2);
    v.decode_engines.resize(2);
    for (uint32_t n = 0; n < 2; ++n) {
      tq[n] = keep(sys.spawn(fake_traffic_queue, tq_s[n]));
      v.traffic_queues.push_back(tq[n]);
      v.leaders.push_back(keep(sys.spawn(fake_leader, rec)));
    }
    v.clients.push_back(keep(sys.spawn(fake_client, rec)));
    pe_worker = keep(sys.spawn(fake_compute, pe_cs));
    de_worker = keep(sys.spawn(fake_compute, de_cs));
    gpu::backend_options bo;
    bo.kind = backend_kind::modeled;  // only its cost-model fit is used: no calibration run
    std::shared_ptr<gpu::compute_backend> backend = gpu::make_backend(bo);
    v.decode_engines[de_id] = real_decode
                                  ? keep(spawn_decode_engine(sys, {de_id, view, io[1].get(), de_worker, backend}))
                                  : keep(sys.spawn(fake_decode_engine, rec));
    de = v.decode_engines[de_id];
    pe = keep(spawn_prefill_engine(sys, {pe_id, view, io[0].get(), pe_worker, backend}));
    v.prefill_engines[pe_id] = pe;
    sched.run();
  }

  // ---- requests ----
  static std::vector<int32_t> prompt_tokens(uint64_t id, uint32_t n) {
    std::vector<int32_t> t(n);
    for (uint32_t i = 0; i < n; ++i) t[i] = int32_t((id * 131 + i * 7) % 500 + 1);
    return t;
  }
  turn_payload payload(uint64_t id, uint32_t prompt, uint32_t hit_blocks, uint32_t gen) const {
    turn_payload p;
    p.request = id;
    p.agent = view->agent_of(id);
    p.turn = uint32_t(id);
    p.tokens = prompt_tokens(id, prompt);
    p.gen = gen;
    p.hit_blocks = hit_blocks;
    return p;
  }
  // The scheduler's assignment of request `id` to PE 0 / DE 1, PE read path; the client knows its turn.
  void assign(uint64_t id, uint32_t prompt, uint32_t hit_blocks, uint32_t gen = 3) {
    rec->turns.push_back(payload(id, prompt, hit_blocks, gen));
    schedule::assignment a;
    a.request.id = id;
    a.request.append_tokens = prompt - hit_blocks * geo.block_tokens;
    a.request.hit_blocks = hit_blocks;
    a.pe = pe_id;
    a.pe_node = 0;
    a.de = de_id;
    a.de_node = 1;
    a.path = schedule::read_path::pe;
    a.pe_blocks = hit_blocks;
    self->send(pe, atom::assign_v, encode(std::vector<schedule::assignment>{a}));
    sched.run();
  }

  // ---- answering held requests (from inside the fake), then running everything that follows ----
  template <class Handle>
  void inside(const Handle& h, std::function<void()> f) {
    self->send(h, atom::complete_v, std::make_shared<std::function<void()>>(std::move(f)));
    sched.run();
  }
  void answer_copy(uint32_t node, size_t i) {
    auto s = tq_s[node];
    REQUIRE(i < s->copies.size());
    REQUIRE_FALSE(s->copies[i].done);
    inside(tq[node], [s, i] {
      s->copies[i].done = true;
      s->copies[i].promise.deliver(batch_bytes(s->copies[i].batch));
    });
  }
  void fail_copy(uint32_t node, size_t i, const std::string& why) {
    auto s = tq_s[node];
    REQUIRE(i < s->copies.size());
    REQUIRE_FALSE(s->copies[i].done);
    inside(tq[node], [s, i, why] {
      s->copies[i].done = true;
      s->copies[i].promise.deliver(make_failure(errc::transfer, why));
    });
  }
  void answer_compute(const fake_compute_actor& w, const std::shared_ptr<compute_script>& s, size_t i) {
    REQUIRE(i < s->calls.size());
    REQUIRE_FALSE(s->calls[i].done);
    inside(w, [s, i] {
      s->calls[i].done = true;
      s->calls[i].promise.deliver(s->calls[i].value);
    });
  }

  // Answers every held copy on `node`, oldest first, including those posted meanwhile (bounded).
  void drain(uint32_t node) {
    for (int round = 0; round < 1000; ++round) {
      const auto& c = tq_s[node]->copies;
      size_t i = 0;
      while (i < c.size() && c[i].done) ++i;
      if (i == c.size()) return;
      answer_copy(node, i);
    }
    FAIL("copies on node " << node << " never stop");
  }

  // ---- reading the copies back ----
  enum class copy_kind { fetch, forward, hbm_load, other };
  // fetch: a buffer slot into the PE's HBM (staging); forward: PE HBM into the DE buffer; hbm_load: the DE
  // buffer into the DE's HBM.
  static copy_kind kind_of(const copy_batch& b) {
    const auto& op = b.ops.at(0);
    if (op.src_kind == runtime::region_kind::buffer && op.dst_kind == runtime::region_kind::hbm)
      return op.dst_engine == pe_id ? copy_kind::fetch : copy_kind::hbm_load;
    if (op.src_kind == runtime::region_kind::hbm && op.dst_kind == runtime::region_kind::buffer) return copy_kind::forward;
    return copy_kind::other;
  }
  // The layer a fetch reads or a forward writes, from its buffer offset inside a slot.
  uint32_t layer_of(const copy_batch& b) const {
    const auto& op = b.ops.at(0);
    const uint64_t off = kind_of(b) == copy_kind::fetch ? op.src_offset : op.dst_offset;
    return uint32_t(((off - view->payload_offset) % view->slot_stride) / geo.layer_bytes());
  }
  uint32_t slot_of(uint64_t buffer_offset) const { return uint32_t(buffer_offset / view->slot_stride); }
  // Index into tq_s[node]->copies of the copy of `kind` for `layer` (the n-th such, counting from 0).
  size_t find_copy(uint32_t node, copy_kind kind, uint32_t layer, size_t nth = 0) const {
    const auto& c = tq_s[node]->copies;
    for (size_t i = 0; i < c.size(); ++i)
      if (kind_of(c[i].batch) == kind && layer_of(c[i].batch) == layer && nth-- == 0) return i;
    FAIL("no such copy on node " << node << " for layer " << layer);
    return 0;
  }
  // Layers of the copies of `kind` posted on `node` (in posting order) and how many are still unanswered.
  std::vector<uint32_t> layers_posted(uint32_t node, copy_kind kind) const {
    std::vector<uint32_t> out;
    for (auto& c : tq_s[node]->copies)
      if (kind_of(c.batch) == kind) out.push_back(layer_of(c.batch));
    return out;
  }
  size_t in_flight(uint32_t node, copy_kind kind) const {
    size_t n = 0;
    for (auto& c : tq_s[node]->copies) n += kind_of(c.batch) == kind && !c.done;
    return n;
  }

  // The last report of engine `e` to its leader.
  engine_report last_report(uint32_t e) const {
    for (auto it = rec->reports.rbegin(); it != rec->reports.rend(); ++it)
      if (it->engine == e) return *it;
    FAIL("engine " << e << " never reported");
    return {};
  }
};

}  // namespace engine_test
