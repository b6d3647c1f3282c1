// The real prefill engine under CAF's test coordinator, against a fake traffic queue, compute worker,
// leader, client and decode engine (engine_fixture.hpp): layer-wise pipelining and the hand-off.
#include "core/pass_timeline.hpp"
#include "engine_fixture.hpp"

using namespace engine_test;

TEST_CASE_FIXTURE(engine_fixture,
                  "prefill pipelines hit-KV fetches two layers deep, computes in order, then hands off") {
  start(big_hbm, big_hbm, /*real_decode*/ false);
  tq_s[0]->copy = answer::hold;  // PE read path: fetches and forwards all go through the PE node's queue
  // 40 tokens = 3 blocks, 2 of them hits: 8 tokens to compute.
  assign(1, 40, 2);

  CHECK(rec->turn_asks == std::vector<uint64_t>{1});
  CHECK(last_report(pe_id).ids == std::vector<uint64_t>{1});  // counted, and named, from its assignment on
  // Every prompt block gets a DE buffer slot (none is read there); the hits are read into the PE buffer.
  CHECK(tq_s[1]->reserves == std::vector<uint32_t>{3});
  REQUIRE(tq_s[0]->loads.size() == 1);
  auto keys = block_keys(prompt_tokens(1, 40), geo.block_tokens);
  keys.resize(2);
  CHECK(tq_s[0]->loads[0] == keys);
  CHECK(tq_s[0]->load_requests == std::vector<uint64_t>{1});  // so the PE node's read_q report can name it
  CHECK(tq_s[1]->loads.empty());

  // The pass started and exactly prefetch_layers = 2 fetches are out; nothing computes before a fetch lands.
  REQUIRE(pe_cs->calls.size() == 1);
  CHECK(pe_cs->calls[0].kind == work::start);
  CHECK(pe_cs->calls[0].ids == std::vector<uint64_t>{1});
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1});
  for (auto& c : tq_s[0]->copies) {  // both hit blocks of the layer, from the PE slots 3 and 4
    REQUIRE(c.batch.ops.size() == 2);
    CHECK(slot_of(c.batch.ops[0].src_offset) == 3);
    CHECK(slot_of(c.batch.ops[1].src_offset) == 4);
    CHECK(c.batch.ops[0].dst_engine == pe_id);
  }

  // Layer 1 lands first: layer 0 still has to come first. Its hit KV leaves for the DE buffer at once.
  answer_copy(0, find_copy(0, kind::fetch, 1));
  CHECK(pe_cs->layers().empty());
  CHECK(layers_posted(0, kind::hit_forward) == std::vector<uint32_t>{1});
  answer_copy(0, find_copy(0, kind::fetch, 0));
  CHECK(pe_cs->layers() == std::vector<uint32_t>{0, 1});
  // Each computed layer's new KV is forwarded, and its staging slot takes the layer two on at once: neither
  // forward reads the staging slot, so the slot does not wait for them to land.
  CHECK(layers_posted(0, kind::hit_forward) == std::vector<uint32_t>{1, 0});
  CHECK(layers_posted(0, kind::forward) == std::vector<uint32_t>{0, 1});
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1, 2, 3});
  CHECK(in_flight(0, kind::hit_forward) == 2);
  CHECK(in_flight(0, kind::forward) == 2);
  {
    // First pass of a PE-path request: the two hit blocks from their PE slots 3 and 4 into DE slots 10 and
    // 11 once staged, the new tokens [32, 40) into slot 12 once computed.
    const auto& h0 = tq_s[0]->copies[find_copy(0, kind::hit_forward, 0)].batch;
    REQUIRE(h0.ops.size() == 2);
    CHECK(slot_of(h0.ops[0].src_offset) == 3);
    CHECK(slot_of(h0.ops[1].src_offset) == 4);
    CHECK(h0.ops[0].length == geo.layer_bytes());
    CHECK(slot_of(h0.ops[0].dst_offset) == 10);
    CHECK(slot_of(h0.ops[1].dst_offset) == 11);
    const auto& f0 = tq_s[0]->copies[find_copy(0, kind::forward, 0)].batch;
    REQUIRE(f0.ops.size() == 1);
    CHECK(slot_of(f0.ops[0].dst_offset) == 12);
    CHECK(f0.ops[0].length == 8 * geo.bytes_per_token_layer);
    for (auto& op : h0.ops) CHECK(op.dst_engine == de_id);
    CHECK(f0.ops[0].dst_engine == de_id);
  }

  // The hit forwards landing changes nothing for the staging: no fetch more, layer 2 is not here yet.
  answer_copy(0, find_copy(0, kind::hit_forward, 0));
  answer_copy(0, find_copy(0, kind::hit_forward, 1));
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1, 2, 3});
  CHECK(in_flight(0, kind::fetch) == 2);
  CHECK(pe_cs->layers().size() == 2);

  answer_copy(0, find_copy(0, kind::fetch, 2));
  answer_copy(0, find_copy(0, kind::fetch, 3));
  CHECK(pe_cs->layers() == std::vector<uint32_t>{0, 1, 2, 3});
  // The KV of the last layers is still on its way: no finish, no hand-off.
  CHECK(pe_cs->count(work::finish) == 0);
  CHECK(rec->handoffs.empty());
  for (uint32_t l : {0, 1, 2}) answer_copy(0, find_copy(0, kind::forward, l));
  answer_copy(0, find_copy(0, kind::hit_forward, 2));
  answer_copy(0, find_copy(0, kind::hit_forward, 3));
  CHECK(pe_cs->count(work::finish) == 0);
  answer_copy(0, find_copy(0, kind::forward, 3));

  REQUIRE(pe_cs->calls.size() == 6);
  CHECK(pe_cs->calls.back().kind == work::finish);
  REQUIRE(rec->handoffs.size() == 1);
  const auto& h = rec->handoffs[0];
  CHECK(h.payload.request == 1);
  CHECK(h.payload.tokens == prompt_tokens(1, 40));
  CHECK(h.first_token == compute_script::first_token(1));
  CHECK(h.de_slots == std::vector<uint32_t>{10, 11, 12});
  CHECK(h.valid_hit_blocks == 2);
  CHECK(h.path == schedule::read_path::pe);
  // The PE buffer slots go back; the DE slots now belong to the decode engine.
  CHECK(tq_s[0]->released == std::vector<uint32_t>{3, 4});
  CHECK(tq_s[1]->released.empty());
  CHECK(rec->results.empty());
  const auto r = last_report(pe_id);
  CHECK(r.seq == 0);
  CHECK(r.ids.empty());
  CHECK(r.free_hbm == big_hbm);
  CHECK(tq_s[0]->copies.size() == 12);  // 4 fetches, 4 hit forwards, 4 new-KV forwards: nothing else
  check_staging_reuse(0, 2);
}

// core/pass_timeline.hpp: each pass's fetch round trips, by where its hit KV sat.
TEST_CASE_FIXTURE(engine_fixture, "a pass records its fetches' round trips by the node the hit KV came from") {
  start(big_hbm, big_hbm, false);
  pass_timeline::process_log().take();  // what earlier cases recorded
  assign(1, 40, 2);                     // PE path: the hit KV comes from the PE node's own buffer
  REQUIRE(rec->handoffs.size() == 1);
  assign(2, 40, 2, 3, schedule::read_path::de);  // DE path: from the decode node's buffer
  REQUIRE(rec->handoffs.size() == 2);
  assign(3, 20, 0);  // no hits: nothing fetched
  REQUIRE(rec->handoffs.size() == 3);
  const auto passes = pass_timeline::process_log().take();
  REQUIRE(passes.size() == 3);
  CHECK(passes[0].fetches.own_ms >= 0);
  CHECK(passes[0].fetches.other_ms == -1);
  CHECK(passes[0].fetches.first_ms >= 0);
  CHECK(passes[1].fetches.own_ms == -1);
  CHECK(passes[1].fetches.other_ms >= 0);
  CHECK(passes[1].fetches.first_ms >= 0);
  CHECK(passes[2].fetches.own_ms == -1);
  CHECK(passes[2].fetches.other_ms == -1);
  CHECK(passes[2].fetches.first_ms == -1);
}

// `de_fetch = "pull"` (docs/design.md §4): DE-path hit KV is read by the PE's own node from the decode node's
// buffer slots; the decode node's traffic queue posts nothing, and the timeline counts them as another node's.
TEST_CASE_FIXTURE(engine_fixture, "pulled DE-path fetches are read by the PE's own node from the DE buffer slots") {
  config.de_fetch = de_fetch_kind::pull;
  start(big_hbm, big_hbm, false);
  pass_timeline::process_log().take();
  assign(1, 40, 2, 3, schedule::read_path::de);
  REQUIRE(rec->handoffs.size() == 1);
  CHECK(tq_s[1]->copies.empty());
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1, 2, 3});
  const auto& de_slots = rec->handoffs[0].de_slots;  // its two hit blocks were read into the first two
  for (uint32_t l = 0; l < 4; ++l) {
    const auto& ops = tq_s[0]->copies[find_copy(0, kind::fetch, l)].batch.ops;
    REQUIRE(ops.size() == 2);
    for (uint32_t b = 0; b < 2; ++b) {
      CHECK(ops[b].pull());
      CHECK(ops[b].via == pe_id);
      CHECK(ops[b].dst_engine == pe_id);
      CHECK(ops[b].src_engine == de_id);
      CHECK(slot_of(ops[b].src_offset) == de_slots.at(b));
    }
  }
  const auto passes = pass_timeline::process_log().take();
  REQUIRE(passes.size() == 1);
  CHECK(passes[0].fetches.own_ms == -1);
  CHECK(passes[0].fetches.other_ms >= 0);
}

TEST_CASE_FIXTURE(engine_fixture, "prefill of a request without hits computes every layer and forwards only new KV") {
  start(big_hbm, big_hbm, false);
  assign(2, 20, 0);  // 20 tokens, no hit: nothing to load or fetch
  CHECK(tq_s[0]->loads.empty());
  CHECK(tq_s[1]->reserves == std::vector<uint32_t>{2});
  CHECK(layers_posted(0, kind::fetch).empty());
  CHECK(pe_cs->layers() == std::vector<uint32_t>{0, 1, 2, 3});
  CHECK(layers_posted(0, kind::forward) == std::vector<uint32_t>{0, 1, 2, 3});
  REQUIRE(rec->handoffs.size() == 1);
  CHECK(rec->handoffs[0].de_slots == std::vector<uint32_t>{10, 11});
  CHECK(rec->handoffs[0].valid_hit_blocks == 0);
  CHECK(last_report(pe_id).free_hbm == big_hbm);
}

TEST_CASE_FIXTURE(engine_fixture, "hit forwards still on their way hold no staging slot: the next layers are fetched") {
  start_holding_copies();
  assign(1, 40, 2);
  answer_fetches({0, 1});
  REQUIRE(layers_posted(0, kind::hit_forward) == std::vector<uint32_t>{0, 1});
  // Both layers computed, their hit and new-KV forwards all unanswered: layers 2 and 3 are fetched into
  // their slots, in layer order, at most prefetch_layers at once.
  CHECK(in_flight(0, kind::hit_forward) == 2);
  CHECK(in_flight(0, kind::forward) == 2);
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1, 2, 3});
  CHECK(in_flight(0, kind::fetch) == 2);
  answer_copy(0, find_copy(0, kind::fetch, 3));  // layer 3 first: it waits for layer 2, computed in order
  CHECK(pe_cs->layers() == std::vector<uint32_t>{0, 1});
  answer_copy(0, find_copy(0, kind::fetch, 2));
  CHECK(pe_cs->layers() == std::vector<uint32_t>{0, 1, 2, 3});
  CHECK(rec->handoffs.empty());  // the forwards have not landed: no hand-off

  drain(0);
  CHECK(pe_cs->layers() == std::vector<uint32_t>{0, 1, 2, 3});
  REQUIRE(rec->handoffs.size() == 1);
  CHECK(rec->handoffs[0].de_slots == std::vector<uint32_t>{10, 11, 12});
  check_staging_reuse(0, 2);
}

TEST_CASE_FIXTURE(engine_fixture, "a staged layer still computing keeps its slot: the fetch two layers on waits") {
  start_holding_copies();
  pe_cs->layer = answer::hold;
  assign(1, 40, 2);
  answer_fetches({0, 1});
  // Both layers staged: layer 1 goes to the worker while layer 0 computes (one layer ahead, no more).
  REQUIRE(pe_cs->layers() == std::vector<uint32_t>{0, 1});
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1});  // both slots hold uncomputed layers
  answer_compute(pe_worker, pe_cs, 1);                                  // layer 0 done: its forward goes out
  // Slot 0 is free again and takes layer 2; slot 1 still holds layer 1, so layer 3 must wait.
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1, 2});
  answer_copy(0, find_copy(0, kind::hit_forward, 0));
  answer_copy(0, find_copy(0, kind::hit_forward, 1));
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1, 2});
  // Layer 2 staged while layer 1 still computes: handed over at once, one ahead again.
  answer_copy(0, find_copy(0, kind::fetch, 2));
  CHECK(pe_cs->layers() == std::vector<uint32_t>{0, 1, 2});
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1, 2});

  answer_all_until_handoff();
  CHECK(pe_cs->layers() == std::vector<uint32_t>{0, 1, 2, 3});
  REQUIRE(rec->handoffs.size() == 1);
  check_staging_reuse(0, 2);
}

// docs/design.md §4: a pass takes spare staging slots where the HBM its batch leaves free holds them.
TEST_CASE_FIXTURE(engine_fixture, "a spare staging slot lets the fetch two layers on go once a fetch lands") {
  config.spare_staging_layers = 1;  // three slots for the tiny model's four layers
  start_holding_copies();
  pe_cs->layer = answer::hold;
  assign(1, 40, 2);
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1});  // still two on their way
  answer_copy(0, find_copy(0, kind::fetch, 0));
  // Layer 0 staged and computing (held): layer 2 has a slot of its own and goes at once.
  REQUIRE(pe_cs->layers() == std::vector<uint32_t>{0});
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1, 2});
  answer_copy(0, find_copy(0, kind::fetch, 1));
  // Layer 3's slot is layer 0's, which still computes: it waits though only one fetch is on its way.
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1, 2});
  answer_compute(pe_worker, pe_cs, 1);  // layer 0 done
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1, 2, 3});

  answer_all_until_handoff();
  CHECK(pe_cs->layers() == std::vector<uint32_t>{0, 1, 2, 3});
  REQUIRE(rec->handoffs.size() == 1);
  check_staging_reuse(0, 3);
}
