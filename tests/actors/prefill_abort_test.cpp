// The real prefill engine when a copy or a layer fails (engine_fixture.hpp): the turn fails with its cause at
// once; every buffer slot and byte of HBM goes back once the aborted pass's last copy or kernel has answered
// (until then they may still write into it); and the engine goes on with the next request.
#include "engine_fixture.hpp"

using namespace engine_test;

TEST_CASE_FIXTURE(engine_fixture,
                  "a failed hit-KV copy fails the turn, frees its slots and HBM, and the next request runs") {
  start_holding_copies();
  pe_cs->start = answer::hold;
  assign(1, 40, 2);
  REQUIRE(in_flight(0, kind::fetch) == 2);
  CHECK(io[0]->hbm(pe_id).free_bytes() < big_hbm);  // staging and new KV are held

  fail_copy(0, find_copy(0, kind::fetch, 0), "CNIC 0 link down");
  REQUIRE(rec->results.size() == 1);
  const auto& r = rec->results[0];
  CHECK(r.request == 1);
  CHECK(r.generated.empty());
  CHECK(contains(r.error, "hit KV transfer failed"));
  CHECK(contains(r.error, "CNIC 0 link down"));
  CHECK(rec->handoffs.empty());
  // Its other fetch and the compute start are still out: what they may write into stays held.
  CHECK(tq_s[0]->released.empty());
  CHECK(tq_s[1]->released.empty());
  CHECK(io[0]->hbm(pe_id).free_bytes() < big_hbm);

  // The aborted pass's compute start and its other fetch answer late: no layer runs, and now all goes back.
  answer_compute(pe_worker, pe_cs, 0);
  answer_copy(0, find_copy(0, kind::fetch, 1));
  CHECK(pe_cs->layers().empty());
  CHECK(rec->results.size() == 1);
  CHECK(tq_s[0]->released == std::vector<uint32_t>{3, 4});        // its PE buffer slots
  CHECK(tq_s[1]->released == std::vector<uint32_t>{10, 11, 12});  // and its DE buffer slots
  CHECK(last_report(pe_id).seq == 0);
  CHECK(last_report(pe_id).free_hbm == big_hbm);

  tq_s[0]->copy = answer::now;
  pe_cs->start = answer::now;
  assign(2, 40, 2);
  REQUIRE(rec->handoffs.size() == 1);
  CHECK(rec->handoffs[0].payload.request == 2);
  CHECK(rec->handoffs[0].de_slots == std::vector<uint32_t>{13, 14, 15});
  CHECK(rec->results.size() == 1);
  CHECK(last_report(pe_id).free_hbm == big_hbm);
}

TEST_CASE_FIXTURE(engine_fixture, "a failed layer fails the turn with the kernel's message and frees everything") {
  start(big_hbm, big_hbm, false);
  pe_cs->layer = answer::fail;
  assign(1, 40, 2);
  REQUIRE(rec->results.size() == 1);
  CHECK(rec->results[0].request == 1);
  CHECK(contains(rec->results[0].error, "layer 0 failed"));
  CHECK(contains(rec->results[0].error, "injected kernel fault"));
  // Layer 1 was staged and handed over while layer 0 computed; nothing after the failure.
  CHECK(pe_cs->layers() == std::vector<uint32_t>{0, 1});
  CHECK(pe_cs->count(work::finish) == 0);
  CHECK(layers_posted(0, kind::forward).empty());
  CHECK(rec->handoffs.empty());
  CHECK(tq_s[0]->released == std::vector<uint32_t>{3, 4});
  CHECK(tq_s[1]->released == std::vector<uint32_t>{10, 11, 12});
  CHECK(last_report(pe_id).free_hbm == big_hbm);

  pe_cs->layer = answer::now;
  assign(2, 40, 2);
  check_only_handoff(2, 1);
}

TEST_CASE_FIXTURE(engine_fixture, "the next pass starts only once the aborted pass's late forward has landed") {
  start_holding_copies();
  assign(1, 40, 2);
  answer_fetches({0, 1});
  REQUIRE(pe_cs->layers() == std::vector<uint32_t>{0, 1});
  REQUIRE(in_flight(0, kind::forward) == 2);
  fail_copy(0, find_copy(0, kind::forward, 0), "DE buffer unreachable");
  REQUIRE(rec->results.size() == 1);
  CHECK(contains(rec->results[0].error, "KV forwarding to the DE failed"));
  CHECK(contains(rec->results[0].error, "DE buffer unreachable"));

  // Request 2 waits while request 1's copies are still out: its forwards read from HBM the new pass would get,
  // its fetches of layers 2 and 3 (posted as layers 0 and 1 were computed) write into it.
  assign(2, 40, 2);
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1, 2, 3});
  answer_copy(0, find_copy(0, kind::hit_forward, 0));
  answer_copy(0, find_copy(0, kind::hit_forward, 1));
  answer_fetches({2, 3});
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1, 2, 3});
  CHECK(pe_cs->layers() == std::vector<uint32_t>{0, 1});  // an aborted pass computes nothing more
  answer_copy(0, find_copy(0, kind::forward, 1));         // the old pass's last copy lands now: request 2's pass starts
  CHECK(layers_posted(0, kind::fetch) == std::vector<uint32_t>{0, 1, 2, 3, 0, 1});
  CHECK(in_flight(0, kind::fetch) == 2);

  answer_copy(0, find_copy(0, kind::fetch, 0, 1));
  CHECK(pe_cs->layers() == std::vector<uint32_t>{0, 1, 0});
  // The rest, one copy at a time: the pass finishes only once all of its own forwards landed.
  for (int i = 0;
       i < 30 && in_flight(0, kind::fetch) + in_flight(0, kind::forward) + in_flight(0, kind::hit_forward) > 0; ++i) {
    size_t next = 0;
    while (tq_s[0]->copies[next].done) ++next;
    answer_copy(0, next);
    if (pe_cs->count(work::finish) > 0) CHECK(in_flight(0, kind::forward) + in_flight(0, kind::hit_forward) == 0);
  }
  CHECK(pe_cs->layers() == std::vector<uint32_t>{0, 1, 0, 1, 2, 3});
  check_only_handoff(2, 1);  // only request 1's failure
  CHECK(last_report(pe_id).free_hbm == big_hbm);
}

TEST_CASE_FIXTURE(engine_fixture, "a late fetch answer of an aborted pass does not count as the next pass's fetch") {
  start_holding_copies();
  assign(1, 40, 2);
  fail_copy(0, find_copy(0, kind::fetch, 0), "read slot poisoned");
  REQUIRE(rec->results.size() == 1);

  assign(2, 40, 2);
  answer_copy(0, find_copy(0, kind::fetch, 1, 0));  // request 1's fetch of layer 1, late
  answer_copy(0, find_copy(0, kind::fetch, 0, 1));  // request 2's layer 0
  // Layer 1 of request 2 has not arrived: it must not be computed over an empty staging slot.
  CHECK(pe_cs->layers() == std::vector<uint32_t>{0});
  drain(0);
  CHECK(pe_cs->layers() == std::vector<uint32_t>{0, 1, 2, 3});
  check_only_handoff(2, 1);
}

TEST_CASE_FIXTURE(engine_fixture, "a failed load or DE reservation fails the turn and returns what was granted") {
  start(big_hbm, big_hbm, false);
  tq_s[0]->load = answer::fail;
  tq_s[0]->why = "SNIC offline";
  assign(1, 40, 2);
  REQUIRE(rec->results.size() == 1);
  CHECK(contains(rec->results[0].error, "KV read on node 0 failed"));
  CHECK(contains(rec->results[0].error, "SNIC offline"));
  CHECK(tq_s[1]->released == std::vector<uint32_t>{10, 11, 12});  // the DE slots that were granted
  CHECK(pe_cs->calls.empty());
  CHECK(last_report(pe_id).seq == 0);

  tq_s[0]->load = answer::now;
  tq_s[1]->reserve = answer::fail;
  tq_s[1]->why = "DE buffer smaller than the prompt";
  assign(2, 40, 2);
  REQUIRE(rec->results.size() == 2);
  CHECK(contains(rec->results[1].error, "DE buffer reservation failed"));
  CHECK(tq_s[0]->released == std::vector<uint32_t>{3, 4});  // the hits that were read
  CHECK(pe_cs->calls.empty());
  CHECK(last_report(pe_id).free_hbm == big_hbm);
}

// docs/design.md §13: the request's DE node was lost and rejoined as a new process while the pass ran. The
// slots it holds there were the dead process's: the pass stops before its next copy, the turn fails (the
// client re-runs it), and no release or hand-off reaches the new process. A request assigned afterwards runs.
TEST_CASE_FIXTURE(engine_fixture, "a DE node that rejoined as a new process: the pass stops and nothing goes to it") {
  start_holding_copies();
  assign(1, 40, 2);
  REQUIRE(in_flight(0, kind::fetch) == 2);
  node_handles back;  // what the launcher's rejoin files in this process (here the same actors)
  back.node = 1;
  back.traffic_queue = caf::actor_cast<caf::actor>(tq[1]);
  back.leader = caf::actor_cast<caf::actor>(view->leaders[1]);
  back.engines = {caf::actor_cast<caf::actor>(de)};  // node 1's one engine
  const uint32_t before = view->generation(1);
  view->set_node(back);
  CHECK(view->generation(1) == before + 1);

  answer_fetches({0, 1});  // layer 0 is computed; its forward would write into the new process's slots
  REQUIRE(rec->results.size() == 1);
  CHECK(rec->results[0].request == 1);
  CHECK(contains(rec->results[0].error, "DE node 1 was lost and has rejoined"));
  CHECK(layers_posted(0, kind::forward).empty());
  CHECK(layers_posted(0, kind::hit_forward).empty());
  CHECK(rec->handoffs.empty());
  CHECK(tq_s[1]->released.empty());                         // its DE slots died with the old process
  CHECK(tq_s[0]->released == std::vector<uint32_t>{3, 4});  // its PE slots come back here
  CHECK(last_report(pe_id).free_hbm == big_hbm);

  tq_s[0]->copy = answer::now;
  assign(2, 40, 2);  // assigned after the rejoin: it knows the new generation
  check_only_handoff(2, 1);
}

// docs/design.md §13: a node lost while a pass fetches hit KV from its buffer. Its copies will never answer
// (the node is gone), so the pass is aborted and its memory freed at once, not after the data-plane deadline;
// a written-off copy that answers after all changes nothing.
TEST_CASE_FIXTURE(engine_fixture,
                  "a node lost mid-fetch: the pass aborts at once, frees everything, ignores late answers") {
  start(big_hbm, big_hbm, false);
  tq_s[1]->copy = answer::hold;  // the DE node, where the hit KV was read (DE path)
  assign(1, 40, 2, 3, schedule::read_path::de);
  REQUIRE(in_flight(1, copy_kind::fetch) == 2);
  CHECK(rec->results.empty());
  CHECK(io[0]->hbm(pe_id).free_bytes() < big_hbm);

  self->send(pe, atom::lost_v, uint32_t(1));
  sched.run();
  REQUIRE(rec->results.size() == 1);
  CHECK(rec->results[0].request == 1);
  CHECK(contains(rec->results[0].error, "node 1 was lost"));
  CHECK(pe_cs->layers().empty());
  CHECK(last_report(pe_id).free_hbm == big_hbm);  // settled without the two copies

  // Node 1 rejoins as a new process (the same actors here); request 2 reads there again.
  node_handles back;
  back.node = 1;
  back.traffic_queue = caf::actor_cast<caf::actor>(tq[1]);
  back.leader = caf::actor_cast<caf::actor>(view->leaders[1]);
  back.engines = {caf::actor_cast<caf::actor>(de)};
  view->set_node(back);
  assign(2, 40, 2, 3, schedule::read_path::de);
  REQUIRE(in_flight(1, copy_kind::fetch) == 4);
  CHECK(rec->results.size() == 1);

  // The written-off copies of request 1 answer late: request 2's pass counts only its own.
  answer_copy(1, find_copy(1, copy_kind::fetch, 0, 0));
  answer_copy(1, find_copy(1, copy_kind::fetch, 1, 0));
  CHECK(pe_cs->layers().empty());
  drain(1);
  drain(0);
  check_only_handoff(2, 1);
  CHECK(last_report(pe_id).free_hbm == big_hbm);
}

// `de_fetch = "pull"` (docs/design.md §4): the PE's own node reads the DE node's buffer, so a node lost mid-pull
// aborts the pass at once, but its memory goes back only once its own node answered those reads (the transport
// fails them when it marks the peer down): until then they could still land in the staging slots.
TEST_CASE_FIXTURE(engine_fixture,
                  "a node lost mid-pull: the pass aborts at once and frees its memory after its reads") {
  config.de_fetch = de_fetch_kind::pull;
  start(big_hbm, big_hbm, false);
  tq_s[0]->copy = answer::hold;
  assign(1, 40, 2, 3, schedule::read_path::de);
  REQUIRE(in_flight(0, copy_kind::fetch) == 2);  // layers 0 and 1, posted by the PE's own node
  CHECK(tq_s[1]->copies.empty());                // nothing asked of the decode node's traffic queue

  self->send(pe, atom::lost_v, uint32_t(1));
  sched.run();
  REQUIRE(rec->results.size() == 1);
  CHECK(contains(rec->results[0].error, "node 1 was lost"));
  CHECK(io[0]->hbm(pe_id).free_bytes() < big_hbm);  // the reads may still land
  fail_copy(0, find_copy(0, copy_kind::fetch, 0), "node 1 was lost");
  CHECK(io[0]->hbm(pe_id).free_bytes() < big_hbm);
  fail_copy(0, find_copy(0, copy_kind::fetch, 1), "node 1 was lost");
  CHECK(pe_cs->layers().empty());
  CHECK(rec->results.size() == 1);
  CHECK(last_report(pe_id).free_hbm == big_hbm);
}

// docs/design.md §13: a request still waiting on its DE node (here behind a pass) fails as soon as the node
// is lost, and no later request is sent there until it rejoins.
TEST_CASE_FIXTURE(engine_fixture,
                  "a node lost while a request waits on it: the request fails at once, the next is refused") {
  start(big_hbm, big_hbm, false);
  pe_cs->start = answer::hold;  // request 1's pass waits for the worker, so request 2 waits behind it
  assign(1, 40, 2);
  assign(2, 40, 2);
  REQUIRE(pe_cs->calls.size() == 1);
  const size_t released = tq_s[0]->released.size();
  self->send(pe, atom::lost_v, uint32_t(1));
  sched.run();
  REQUIRE(rec->results.size() == 1);
  CHECK(rec->results[0].request == 2);  // request 1's pass reads nothing there; its forward will fail alone
  CHECK(contains(rec->results[0].error, "DE node 1 was lost"));
  CHECK(tq_s[0]->released.size() == released + 2);  // its two hits read on the PE side go back

  const size_t reserves = tq_s[1]->reserves.size();
  assign(3, 40, 2);  // assigned to the lost node (whoever assigned it did not know yet)
  REQUIRE(rec->results.size() == 2);
  CHECK(contains(rec->results[1].error, "was lost before this request's KV was read"));
  CHECK(tq_s[1]->reserves.size() == reserves);  // nothing more asked of the lost node
}
