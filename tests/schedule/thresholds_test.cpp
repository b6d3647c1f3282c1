// docs/design.md §7.2, §7.3: each threshold changes a decision on its own, all else equal.
#include <doctest/doctest.h>

#include "schedule/selection.hpp"
#include "tests/schedule/helpers.hpp"

using namespace dualpath::schedule;
using namespace dualpath::schedule::test;

TEST_CASE("α changes the prefill engine chosen in a group that spans two nodes") {
  cluster_snapshot snap;
  add_node(snap, 1, role::prefill, /*read_q*/ 3000, {50, 60});  // busier engines, longer read queue
  add_node(snap, 2, role::prefill, /*read_q*/ 9000, {10, 20});
  const std::vector<node_snapshot*> group{snap.find(1), snap.find(2)};
  // α above both queues: both nodes are C2, the emptiest engine wins.
  CHECK(select_prefill(group, thresholds(/*α tokens*/ 1000, 1000)).engine->engine == 200);
  // α between them (5000 bytes): node 2 is C3, so node 1's emptiest engine wins.
  CHECK(select_prefill(group, thresholds(500, 1000)).engine->engine == 100);
  // α below both: both C3 again, the emptiest engine wins.
  CHECK(select_prefill(group, thresholds(100, 1000)).engine->engine == 200);
}

TEST_CASE("C1: an engine with tok_e above β gets nothing, however short its node's read queue") {
  cluster_snapshot snap;
  add_node(snap, 1, role::prefill, 0, {400, 900});
  const std::vector<node_snapshot*> group{snap.find(1)};
  CHECK(select_prefill(group, thresholds(1000, /*β*/ 1000)).engine->engine == 100);
  CHECK(select_prefill(group, thresholds(1000, /*β*/ 399)).engine == nullptr);
  snap.find(1)->engines[0].tok = 1001;  // now above β = 1000: the busier engine is the only choice
  CHECK(select_prefill(group, thresholds(1000, 1000)).engine->engine == 101);
}

TEST_CASE("Z changes the decode engine chosen") {
  node_snapshot g;
  g.kind = role::decode;
  // engine, node, seq, tok, free HBM: engine 0 holds few but long requests, engine 1 many short ones.
  g.engines = {{0, 9, 1, 900, 1000}, {1, 9, 4, 100, 1000}};
  const auto r = make_request(1, 10, /*len*/ 100, /*kv*/ 10);
  // z_slack 1.05: Z = 1.05 × (100 + 1000) / 2 = 577.5; only engine 1 stays under it, despite its seq_e.
  node_snapshot tight = g;
  CHECK(place_in_decode_group(tight, {&r}, 1.05) == std::vector<int>{1});
  // A loose Z admits both: the smaller seq_e decides.
  node_snapshot loose = g;
  CHECK(place_in_decode_group(loose, {&r}, 2.0) == std::vector<int>{0});
}
