#pragma once
// The fixture of the engine tests: CAF's test coordinator, a scratch block store, both nodes' data plane
// (for their HBM arenas), the fakes of engine_fakes.hpp, and the real engines under test. Node 0 holds
// prefill engine 0, node 1 decode engine 1. Helpers answer held requests and read the copies back.
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "protocol/request_ids.hpp"
#include "engine_fakes.hpp"
#include "runtime/kv_plan.hpp"
#include "storage/block_store.hpp"
#include "test_coordinator.hpp"
#include "tests/common/scratch_dir.hpp"
#include "tests/common/scratch_store.hpp"

namespace engine_test {

namespace fs = std::filesystem;

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// HBM for engines that never run short of it.
constexpr uint64_t big_hbm = 1 << 20;

// ---- the fixture: node 0 holds prefill engine 0, node 1 decode engine 1 ----
struct engine_fixture {
  static constexpr uint32_t pe_id = 0, de_id = 1;

  // The data plane (HBM arenas) outlives the actor system.
  test::scratch_dir dir;
  kv_geometry geo{4, 16, 256};  // the tiny model: 4 layers, 16-token blocks, 4 KiB Layer Blocks
  std::unique_ptr<storage::block_store> store;
  std::unique_ptr<runtime::node_io> io[2];
  std::unique_ptr<fake_node> nodes[2];  // what the engines see of their node: io's HBM, copies scripted

  caf::actor_system_config cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  caf::scheduler::test_coordinator& sched;

  cluster_config config;
  cluster_view_ptr view = std::make_shared<cluster_view>();
  std::shared_ptr<tq_script> tq_s[2] = {std::make_shared<tq_script>(), std::make_shared<tq_script>()};
  std::shared_ptr<compute_script> pe_cs = std::make_shared<compute_script>(),
                                  de_cs = std::make_shared<compute_script>();
  std::shared_ptr<recorder> rec = std::make_shared<recorder>();
  traffic_queue_actor tq[2];
  fake_compute_actor pe_worker, de_worker;
  prefill_engine_actor pe;
  decode_engine_actor de;
  std::vector<caf::actor> spawned;

  engine_fixture()
      : sys(test::test_coordinator_config(cfg)),
        self(sys, true),
        sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {
    store = storage::block_store::open(test::scratch_store_options(
        dir.str(), {42, geo.layers, geo.block_tokens, uint32_t(geo.bytes_per_token_layer)}));
    config.prefill_nodes = 1;
    config.decode_nodes = 1;
    config.engines_per_node = 1;
    config.prefetch_layers = 2;
    config.spare_staging_layers = 0;  // the tests pin a pass's slots at prefetch_layers unless they say otherwise
    tq_s[0]->next_slot = 3;           // PE buffer slots: 3, 4, ...
    tq_s[1]->next_slot = 10;          // DE buffer slots: 10, 11, ...
  }

  ~engine_fixture() {
    // Held promises hold their actors: drop them before the actors exit.
    for (auto& t : tq_s) t->copies.clear();
    pe_cs->calls.clear();
    de_cs->calls.clear();
    for (auto& a : spawned) self->send_exit(a, caf::exit_reason::user_shutdown);
    sched.run();
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
      nodes[n] = std::make_unique<fake_node>(*io[n], tq_s[n]);
    }
    auto& v = *view;
    v.geometry = geo;
    v.slots = {store->read_buffer_bytes(), store->payload_offset()};
    v.config = config;
    v.vocab = 512;
    v.stored_prefix = [s = store.get()](const std::vector<block_key>& chain) { return s->lookup(chain); };
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
                                  ? keep(spawn_decode_engine(sys, {de_id, view, nodes[1].get(), de_worker, backend}))
                                  : keep(sys.spawn(fake_decode_engine, rec));
    de = v.decode_engines[de_id];
    pe = keep(spawn_prefill_engine(sys, {pe_id, view, nodes[0].get(), pe_worker, backend}));
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
    p.agent = agent_of(id);
    p.turn = uint32_t(id);
    p.tokens = prompt_tokens(id, prompt);
    p.gen = gen;
    p.hit_blocks = hit_blocks;
    return p;
  }
  // The scheduler's assignment of request `id` to PE 0 / DE 1, PE read path; the client knows its turn.
  void assign(uint64_t id, uint32_t prompt, uint32_t hit_blocks, uint32_t gen = 3,
              schedule::read_path path = schedule::read_path::pe) {
    rec->turns.push_back(payload(id, prompt, hit_blocks, gen));
    schedule::assignment a;
    a.request.id = id;
    a.request.append_tokens = prompt - hit_blocks * geo.block_tokens;
    a.request.hit_blocks = hit_blocks;
    a.pe = pe_id;
    a.pe_node = 0;
    a.de = de_id;
    a.de_node = 1;
    a.path = path;
    a.pe_blocks = path == schedule::read_path::pe ? hit_blocks : 0;
    self->send(pe, atom::assign_v, encode(std::vector<schedule::assignment>{a}));
    sched.run();
  }

  // PE 0 (and its DE) with plenty of HBM and every copy held, so a test answers or fails each one itself.
  void start_holding_copies() {
    start(big_hbm, big_hbm, false);
    tq_s[0]->copy = answer::hold;
  }
  // After `failed` turns failed, request `request` is the one turn handed to the DE.
  void check_only_handoff(uint64_t request, size_t failed) {
    REQUIRE(rec->handoffs.size() == 1);
    CHECK(rec->handoffs[0].payload.request == request);
    CHECK(rec->results.size() == failed);
  }

  // ---- answering held requests (from inside the fake), then running everything that follows ----
  template <class Handle>
  void inside(const Handle& h, std::function<void()> f) {
    self->send(h, atom::complete_v, std::make_shared<std::function<void()>>(std::move(f)));
    sched.run();
  }
  // Answers PE 0's first-pass fetch of each of `layers`, in that order.
  void answer_fetches(std::initializer_list<uint32_t> layers) {
    for (uint32_t l : layers) answer_copy(0, find_copy(0, copy_kind::fetch, l));
  }
  void answer_copy(uint32_t node, size_t i) { finish_copy(node, i, status{}); }
  void fail_copy(uint32_t node, size_t i, const std::string& why) { finish_copy(node, i, status(errc::transfer, why)); }
  // Answers held copy i on `node` from inside that node's fake traffic queue (copy_call::finish).
  void finish_copy(uint32_t node, size_t i, status st) {
    auto s = tq_s[node];
    REQUIRE(i < s->copies.size());
    REQUIRE_FALSE(s->copies[i].done);
    inside(tq[node], [s, i, st] { s->copies[i].finish(s->clock, st); });
  }
  // Answers every held copy on `node` before the engines run again, so each sees all of them at once.
  void answer_held_together(uint32_t node) {
    auto s = tq_s[node];
    inside(tq[node], [s] {
      for (auto& c : s->copies)
        if (!c.done) c.finish(s->clock, status{});
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

  // Answers every compute call and every copy on the PE node as they come, until the pass hands off.
  void answer_all_until_handoff() {
    for (int i = 0; i < 20 && rec->handoffs.empty(); ++i) {
      for (size_t k = 0; k < pe_cs->calls.size(); ++k)
        if (!pe_cs->calls[k].done) answer_compute(pe_worker, pe_cs, k);
      for (size_t k = 0; k < tq_s[0]->copies.size(); ++k)
        if (!tq_s[0]->copies[k].done) answer_copy(0, k);
    }
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
  enum class copy_kind { fetch, hit_forward, forward, hbm_load, other };
  // fetch: a buffer slot into the PE's HBM (staging); hit_forward: PE-path hit KV from the PE buffer into the
  // DE buffer; forward: new KV from PE HBM into the DE buffer; hbm_load: the DE buffer into the DE's HBM.
  copy_kind kind_of(const copy_batch& b) const {
    const auto& op = b.ops.at(0);
    if (op.src_kind == runtime::region_kind::buffer && op.dst_kind == runtime::region_kind::hbm)
      return op.dst_engine == pe_id ? copy_kind::fetch : copy_kind::hbm_load;
    if (op.src_kind == runtime::region_kind::buffer && op.dst_kind == runtime::region_kind::buffer)
      return copy_kind::hit_forward;
    if (op.src_kind == runtime::region_kind::hbm && op.dst_kind == runtime::region_kind::buffer)
      return copy_kind::forward;
    return copy_kind::other;
  }
  // The layer a fetch reads or a forward writes, from its buffer offset inside a slot.
  uint32_t layer_of(const copy_batch& b) const {
    const auto& op = b.ops.at(0);
    const uint64_t off = kind_of(b) == copy_kind::fetch ? op.src_offset : op.dst_offset;
    return uint32_t(((off - view->slots.payload_offset) % view->slots.stride) / geo.layer_bytes());
  }
  uint32_t slot_of(uint64_t buffer_offset) const { return uint32_t(buffer_offset / view->slots.stride); }
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

  // One pass on `node` with `depth` staging slots: the fetch of layer L reuses the slot of layer L - depth,
  // so it may only be posted once that layer was computed. A layer's new-KV forward is posted as its compute
  // answers, so that forward must come before the fetch (the tests' passes all compute new tokens).
  void check_staging_reuse(uint32_t node, uint32_t depth) const {
    const auto& c = tq_s[node]->copies;
    for (size_t i = 0; i < c.size(); ++i) {
      if (kind_of(c[i].batch) != copy_kind::fetch || layer_of(c[i].batch) < depth) continue;
      const uint32_t layer = layer_of(c[i].batch);
      bool computed = false;  // looking back to this pass's first fetch (layer 0), posted as the pass began
      for (size_t j = i; j-- > 0 && !computed;) {
        if (kind_of(c[j].batch) == copy_kind::fetch && layer_of(c[j].batch) == 0) break;
        computed = kind_of(c[j].batch) == copy_kind::forward && layer_of(c[j].batch) == layer - depth;
      }
      CHECK_MESSAGE(computed, "layer " << layer << " fetched before layer " << layer - depth << " was computed");
    }
  }

  // The last report of engine `e` to its leader.
  engine_report last_report(uint32_t e) const {
    for (auto it = rec->reports.rbegin(); it != rec->reports.rend(); ++it)
      if (it->engine == e) return *it;
    FAIL("engine " << e << " never reported");
    return {};
  }
};

using kind = engine_fixture::copy_kind;

}  // namespace engine_test
