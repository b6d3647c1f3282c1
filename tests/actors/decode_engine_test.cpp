// The real decode engine under CAF's test coordinator (engine_fixture.hpp): hand-offs into HBM, batched decode
// steps, results after `gen` tokens, FIFO admission by HBM, and a failing step. Prompts and generations stay
// inside one Full Block, so nothing is persisted (the store's writer thread is never involved).
#include "engine_fixture.hpp"
#include "protocol/waits.hpp"

using namespace engine_test;

namespace {

std::vector<uint64_t> ids_of(const compute_call& c) { return c.ids; }

}  // namespace

struct decode_fixture : engine_fixture {
  uint64_t de_hbm = 0;

  void start_decode(uint64_t hbm) {
    de_hbm = hbm;
    start(1 << 20, hbm, /*real_decode*/ true);
  }
  // What a prefill engine hands over: the prompt's KV in DE buffer `slots`, and the first token.
  void hand_off(uint64_t id, uint32_t prompt, uint32_t gen, std::vector<uint32_t> slots) {
    handoff_info h;
    h.payload = payload(id, prompt, 0, gen);
    h.first_token = compute_script::first_token(id);
    h.de_slots = std::move(slots);
    self->send(de, atom::handoff_v, encode(h));
    sched.run();
  }
  // Requests 1 and 2 (prompts 5 and 7, four tokens each) handed off together, their buffer -> HBM
  // copies held and decode steps answered as `decode` says.
  void hand_off_two_held(answer decode) {
    start_decode(1 << 20);
    tq_s[1]->copy = answer::hold;
    de_cs->decode = decode;
    hand_off(1, 5, 4, {10});
    hand_off(2, 7, 4, {11});
  }
  std::vector<compute_call>& steps() { return de_cs->calls; }
  void answer_step(size_t i) { answer_compute(de_worker, de_cs, i); }
  const turn_result* result_of(uint64_t id) const {
    for (auto& r : rec->results)
      if (r.request == id) return &r;
    return nullptr;
  }
};

TEST_CASE_FIXTURE(decode_fixture, "two hand-offs share decode steps and each gets its result after gen tokens") {
  hand_off_two_held(answer::hold);

  // Both wait for their DE buffer -> HBM copy (one Full Block each, through the DE's own CNIC).
  REQUIRE(tq_s[1]->copies.size() == 2);
  for (size_t k = 0; k < 2; ++k) {
    const auto& b = tq_s[1]->copies[k].batch;
    REQUIRE(b.ops.size() == 1);
    CHECK(kind_of(b) == kind::hbm_load);
    CHECK(b.ops[0].via == de_id);
    CHECK(slot_of(b.ops[0].src_offset) == 10 + k);
    CHECK(b.ops[0].length == geo.block_bytes());
  }
  CHECK(steps().empty());
  CHECK(last_report(de_id).seq == 2);
  // Being admitted, both count in the report and are named, which ends the scheduler's charges for them.
  CHECK(last_report(de_id).ids == std::vector<uint64_t>{1, 2});
  CHECK(io[1]->hbm(de_id).free_bytes() == de_hbm - 2 * geo.block_bytes());

  // Both copies land together. The first starts a step on its own; the second joins the next one.
  answer_held_together(1);
  CHECK(tq_s[1]->released == std::vector<uint32_t>{10, 11});  // the DE buffer slots go back
  REQUIRE(steps().size() == 1);
  CHECK(steps()[0].kind == work::decode);
  CHECK(ids_of(steps()[0]) == std::vector<uint64_t>{1});

  answer_step(0);
  REQUIRE(steps().size() == 2);
  CHECK(ids_of(steps()[1]) == std::vector<uint64_t>{1, 2});  // one step carries both requests
  answer_step(1);
  REQUIRE(steps().size() == 3);
  CHECK(ids_of(steps()[2]) == std::vector<uint64_t>{1, 2});
  CHECK(rec->results.empty());

  // Request 1: its first token plus three steps = 4 tokens. Request 2 still needs one more.
  answer_step(2);
  REQUIRE(rec->results.size() == 1);
  const auto* r1 = result_of(1);
  REQUIRE(r1);
  CHECK(r1->error.empty());
  CHECK(r1->prompt_tokens == 5);
  CHECK(r1->generated == std::vector<int32_t>{compute_script::first_token(1), 1005, 1006, 1007});
  REQUIRE(steps().size() == 4);
  CHECK(ids_of(steps()[3]) == std::vector<uint64_t>{2});

  answer_step(3);
  REQUIRE(rec->results.size() == 2);
  const auto* r2 = result_of(2);
  REQUIRE(r2);
  CHECK(r2->error.empty());
  CHECK(r2->generated == std::vector<int32_t>{compute_script::first_token(2), 1007, 1008, 1009});
  CHECK(steps().size() == 4);  // nothing left to decode
  CHECK(last_report(de_id).seq == 0);
  CHECK(last_report(de_id).free_hbm == de_hbm);
}

TEST_CASE_FIXTURE(decode_fixture, "a request of one token is answered at once without a decode step") {
  start_decode(1 << 20);
  hand_off(3, 9, 1, {12});
  REQUIRE(rec->results.size() == 1);
  CHECK(rec->results[0].generated == std::vector<int32_t>{compute_script::first_token(3)});
  CHECK(steps().empty());
  CHECK(last_report(de_id).free_hbm == de_hbm);
}

TEST_CASE_FIXTURE(decode_fixture, "hand-offs wait FIFO for decode HBM; one that can never fit fails naming the sizes") {
  const uint64_t one_block = 16 << 10;  // the tiny model's Full Block: HBM for one request at a time
  start_decode(one_block);
  de_cs->decode = answer::hold;
  hand_off(1, 5, 3, {10});
  hand_off(2, 5, 3, {11});
  REQUIRE(tq_s[1]->copies.size() == 1);  // request 2 waits for HBM: no copy, no failure
  CHECK(rec->results.empty());
  CHECK(last_report(de_id).seq == 2);

  hand_off(3, 20, 3, {12, 13});  // two blocks: more than the whole HBM
  // Admission looks at the head only: request 3 is refused once request 2 got its turn.
  CHECK(rec->results.empty());
  answer_step(0);
  answer_step(1);
  REQUIRE(result_of(1));
  CHECK(result_of(1)->generated.size() == 3);
  REQUIRE(tq_s[1]->copies.size() == 2);  // request 2 admitted as request 1 freed its block
  CHECK(slot_of(tq_s[1]->copies[1].batch.ops[0].src_offset) == 11);
  const auto* r3 = result_of(3);
  REQUIRE(r3);
  CHECK(contains(r3->error, "needs " + std::to_string(2 * one_block) + " bytes of HBM"));
  CHECK(contains(r3->error, "has " + std::to_string(one_block)));
  CHECK(tq_s[1]->released == std::vector<uint32_t>{10, 12, 13, 11});

  answer_step(2);
  answer_step(3);
  REQUIRE(result_of(2));
  CHECK(result_of(2)->error.empty());
  CHECK(result_of(2)->generated.size() == 3);
  CHECK(last_report(de_id).seq == 0);
  CHECK(last_report(de_id).free_hbm == one_block);
}

TEST_CASE_FIXTURE(decode_fixture, "a failed decode step fails every request in it and frees their HBM") {
  hand_off_two_held(answer::fail);
  answer_held_together(1);
  // The first step (request 1 alone) fails; request 2 had joined the engine meanwhile and fails next.
  REQUIRE(rec->results.size() == 2);
  for (auto& r : rec->results) {
    CHECK(contains(r.error, "decode step failed"));
    CHECK(contains(r.error, "injected kernel fault"));
    CHECK(r.generated.empty());
  }
  CHECK(steps().size() == 2);
  CHECK(last_report(de_id).seq == 0);
  CHECK(last_report(de_id).free_hbm == de_hbm);
}

TEST_CASE_FIXTURE(decode_fixture, "a failed DE buffer to HBM copy fails the turn, frees its HBM and admits the next") {
  start_decode(16 << 10);
  tq_s[1]->copy = answer::hold;
  hand_off(1, 5, 3, {10});
  hand_off(2, 5, 3, {11});
  REQUIRE(tq_s[1]->copies.size() == 1);
  fail_copy(1, 0, "loopback CNIC reset");
  REQUIRE(rec->results.size() == 1);
  CHECK(rec->results[0].request == 1);
  CHECK(contains(rec->results[0].error, "DE buffer to HBM copy failed"));
  CHECK(contains(rec->results[0].error, "loopback CNIC reset"));
  CHECK(tq_s[1]->released == std::vector<uint32_t>{10});
  REQUIRE(tq_s[1]->copies.size() == 2);  // request 2 got the freed HBM
  answer_copy(1, 1);
  REQUIRE(rec->results.size() == 2);
  CHECK(result_of(2)->error.empty());
  CHECK(result_of(2)->generated.size() == 3);
  CHECK(last_report(de_id).free_hbm == 16 << 10);
}

// actors/request_watch.hpp: the engine keeps its data-plane deadlines itself, on the actor clock.
TEST_CASE_FIXTURE(decode_fixture,
                  "a buffer to HBM copy that never answers fails its turn at its deadline, not before") {
  start_decode(1 << 20);
  tq_s[1]->copy = answer::hold;
  hand_off(1, 5, 3, {10});
  REQUIRE(tq_s[1]->copies.size() == 1);
  const auto deadline = protocol::waits_of(config).data_plane();
  sched.advance_time(deadline - std::chrono::milliseconds(2));
  sched.run();
  CHECK(rec->results.empty());
  hand_off(2, 5, 3, {11});  // posted 2 ms before the first copy's deadline
  REQUIRE(tq_s[1]->copies.size() == 2);

  sched.advance_time(std::chrono::milliseconds(2));
  sched.run();
  REQUIRE(rec->results.size() == 1);
  CHECK(rec->results[0].request == 1);
  CHECK(contains(rec->results[0].error, "DE buffer to HBM copy failed"));
  CHECK(contains(rec->results[0].error, "timeout"));
  CHECK(tq_s[1]->released == std::vector<uint32_t>{10});
  // The first copy's answer after its deadline finds no handler: nothing more is released or answered.
  answer_copy(1, 0);
  CHECK(rec->results.size() == 1);
  CHECK(tq_s[1]->released == std::vector<uint32_t>{10});

  // The second copy answers within its own deadline: its turn decodes, and that deadline passing later
  // fails nothing.
  answer_copy(1, 1);
  REQUIRE(rec->results.size() == 2);
  CHECK(result_of(2)->error.empty());
  CHECK(result_of(2)->generated.size() == 3);
  sched.advance_time(deadline);
  sched.run();
  CHECK(rec->results.size() == 2);
  CHECK(last_report(de_id).free_hbm == 1 << 20);
}

TEST_CASE_FIXTURE(decode_fixture,
                  "an unanswered copy posted after an earlier deadline was armed still fails at its own") {
  start_decode(1 << 20);
  tq_s[1]->copy = answer::hold;
  de_cs->decode = answer::hold;
  hand_off(1, 5, 3, {10});
  answer_copy(1, 0);  // request 1 decodes; its first step is held with a compute deadline
  REQUIRE(steps().size() == 1);
  const auto data_plane = protocol::waits_of(config).data_plane();
  sched.advance_time(std::chrono::seconds(1));
  hand_off(2, 7, 3, {11});  // its copy's deadline is 1 s past request 2's posting
  REQUIRE(tq_s[1]->copies.size() == 2);
  for (size_t i = 0; i < 4 && result_of(1) == nullptr; ++i) {  // each step's deadline goes with its answer
    REQUIRE(steps().size() == i + 1);
    answer_step(i);
  }
  REQUIRE(result_of(1) != nullptr);
  CHECK(result_of(1)->error.empty());

  sched.advance_time(data_plane - std::chrono::milliseconds(1));
  sched.run();
  CHECK(result_of(2) == nullptr);
  sched.advance_time(std::chrono::milliseconds(1));
  sched.run();
  REQUIRE(result_of(2) != nullptr);
  CHECK(contains(result_of(2)->error, "timeout"));
}
