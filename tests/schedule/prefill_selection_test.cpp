// docs/design.md §7.2: C1/C2/C3 with α and β, FIFO over the global queue.
#include <doctest/doctest.h>

#include "schedule/selection.hpp"
#include "tests/schedule/helpers.hpp"

using namespace dualpath::schedule;
using namespace dualpath::schedule::test;

TEST_CASE("figure 5: below α, two engines above β: least-loaded non-overloaded engine wins") {
  cluster_snapshot snap;
  const auto p = thresholds(/*alpha*/ 100, /*beta*/ 1000);  // α = 1000 bytes of read_q
  add_node(snap, 1, role::prefill, /*read_q*/ 500, {1500, 300, 2000, 400});
  add_node(snap, 2, role::prefill, /*read_q*/ 5000, {10, 20});
  auto& low = *snap.find(1);
  auto& high = *snap.find(2);
  std::vector<node_snapshot*> group{&low, &high};
  auto c = select_prefill(group, p);
  REQUIRE(c.engine);
  // Engines 0 and 2 are C1 (above β); node 2 is C3 even though its engines are emptier.
  CHECK(c.node == &low);
  CHECK(c.engine->engine == 101);

  SUBCASE("the node above α only gets work when no C2 engine exists in the group") {
    low.engines[1].tok = 1001;
    low.engines[3].tok = 1200;
    c = select_prefill(group, p);
    REQUIRE(c.engine);
    CHECK(c.node == &high);
    CHECK(c.engine->engine == 200);
  }
  SUBCASE("every engine above β: nothing is chosen") {
    for (auto* n : group)
      for (auto& e : n->engines) e.tok = 5000;
    CHECK_FALSE(select_prefill(group, p).engine);
  }
  SUBCASE("read_q exactly α still counts as C2") {
    high.read_q = 1000;
    c = select_prefill(group, p);
    CHECK(c.node == &high);
  }
}

TEST_CASE("dualpath assign: FIFO, smallest tok_e first, snapshot updated, stops when overloaded") {
  cluster_snapshot snap;
  const auto p = thresholds(1000000, 250);
  add_node(snap, 1, role::prefill, 0, {0, 50});
  add_node(snap, 5, role::decode, 0, {0, 0, 0, 0});
  auto pol = make_policy("balanced");
  std::deque<request_info> waiting;
  for (uint64_t i = 0; i < 10; ++i) waiting.push_back(make_request(i, /*append*/ 100));
  const auto out = pol->assign(snap, 1, waiting, p);
  // Engine 100: 0 → 100 → 200 → 300 (> β stops it); engine 101: 50 → 150 → 250 → 350.
  // Order: r0→100 (0<50), r1→101 (50<100), r2→100 (100<150), r3→101, r4→100 (200<250), r5→101 (250 ≤ β).
  REQUIRE(out.size() == 6);
  const uint32_t expect_pe[] = {100, 101, 100, 101, 100, 101};
  for (size_t i = 0; i < out.size(); ++i) {
    CHECK(out[i].request.id == i);
    CHECK(out[i].pe == expect_pe[i]);
    CHECK(out[i].pe_node == 1);
    CHECK(out[i].de_node == 5);
  }
  CHECK(snap.find(1)->engines[0].tok == 300);
  CHECK(snap.find(1)->engines[1].tok == 350);
  CHECK(snap.find(1)->engines[0].seq == 3);
  REQUIRE(waiting.size() == 4);
  CHECK(waiting.front().id == 6);
  // A second fetch right away gets nothing: the snapshot already carries the first one.
  CHECK(pol->assign(snap, 1, waiting, p).empty());
  CHECK(waiting.size() == 4);
}

TEST_CASE("a group on a node above α still gets work when it has no C2 engine") {
  cluster_snapshot snap;
  add_node(snap, 1, role::prefill, /*read_q*/ 1u << 30, {0});
  add_node(snap, 5, role::decode, 0, {0});
  std::deque<request_info> waiting{make_request(7)};
  const auto out = make_policy("balanced")->assign(snap, 1, waiting, thresholds(10, 1000));
  REQUIRE(out.size() == 1);
  CHECK(out[0].pe == 100);
}

TEST_CASE("fetch from an unknown or decode node assigns nothing") {
  cluster_snapshot snap;
  add_node(snap, 5, role::decode, 0, {0});
  std::deque<request_info> waiting{make_request(1)};
  auto pol = make_policy("balanced");
  CHECK(pol->assign(snap, 1, waiting, thresholds(10, 1000)).empty());
  CHECK(pol->assign(snap, 5, waiting, thresholds(10, 1000)).empty());
  CHECK(waiting.size() == 1);
}
