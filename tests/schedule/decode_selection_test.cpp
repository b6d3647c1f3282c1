// docs/design.md §7.3: level 1 (group with the smallest Σ tok_e), level 2 (Z threshold, HBM fit).
#include <doctest/doctest.h>

#include "schedule/selection.hpp"
#include "tests/schedule/helpers.hpp"

using namespace dualpath::schedule;
using namespace dualpath::schedule::test;

TEST_CASE("level 2: hand-computed Z over the fitting prefix R") {
  node_snapshot g;
  g.kind = role::decode;
  g.engines = {{0, 9, 3, 100, 100}, {1, 9, 1, 200, 100}, {2, 9, 2, 300, 100}};  // free HBM 300 in all
  const auto r1 = make_request(1, 10, /*len*/ 50, /*kv*/ 120);
  const auto r2 = make_request(2, 10, /*len*/ 150, /*kv*/ 150);
  const auto r3 = make_request(3, 10, /*len*/ 60, /*kv*/ 90);  // 120+150+90 > 300: not in R
  const std::vector<const request_info*> queue{&r1, &r2, &r3};
  // Z = 1.05 × (50 + 150 + (100 + 200 + 300)) / 3 = 280.
  CHECK(decode_threshold(g, queue, 1.05) == doctest::Approx(280.0));
  CHECK(decode_threshold(g, queue, 1.0) == doctest::Approx(800.0 / 3));
}

TEST_CASE("level 2: preferred under Z by smallest seq_e, fallback smallest tok_e, stop without HBM") {
  node_snapshot g;
  g.kind = role::decode;
  // engine: seq, tok, free HBM
  g.engines = {{0, 9, 5, 100, 1000}, {1, 9, 1, 260, 1000}, {2, 9, 2, 150, 1000}};
  const auto r1 = make_request(1, 10, /*len*/ 20, /*kv*/ 400);
  const auto r2 = make_request(2, 10, /*len*/ 20, /*kv*/ 700);
  const auto r3 = make_request(3, 10, /*len*/ 20, /*kv*/ 900);
  const auto r4 = make_request(4, 10, /*len*/ 20, /*kv*/ 10);
  const std::vector<const request_info*> queue{&r1, &r2, &r3, &r4};
  // Free HBM 3000 ≥ 400 + 700 + 900 + 10: R is all four, Σ len = 80.
  // Z = 1.05 × (80 + 510) / 3 = 206.5.
  CHECK(decode_threshold(g, queue, 1.05) == doctest::Approx(206.5));
  const auto placed = place_in_decode_group(g, queue, 1.05);
  // r1: under Z are engine 0 (120) and 2 (170); engine 1 (280) is over. Smallest seq: engine 2 (seq 2).
  CHECK(placed[0] == 2);
  // r2: engine 2 now has 600 free < 700; under Z only engine 0 (120): chosen although seq 5.
  CHECK(placed[1] == 0);
  // r3 (900): engine 0 has 300 free, engine 2 600: only engine 1 (280 > Z): fallback.
  CHECK(placed[2] == 1);
  // r4: engines 0 (tok 120 → +20 = 140 ≤ Z, seq 6), 2 (190 ≤ Z, seq 3): engine 2.
  CHECK(placed[3] == 2);
  CHECK(g.engines[2].seq == 4);
  CHECK(g.engines[2].tok == 190);
  CHECK(g.engines[2].free_hbm == 1000 - 400 - 10);

  SUBCASE("no engine has HBM: stop there and keep the rest unplaced") {
    node_snapshot full;
    full.engines = {{0, 9, 0, 0, 50}, {1, 9, 0, 0, 500}};
    const auto a = make_request(1, 10, 20, /*kv*/ 400);
    const auto b = make_request(2, 10, 20, /*kv*/ 400);  // engine 1 is down to 100 after a
    const auto c = make_request(3, 10, 20, /*kv*/ 10);   // would fit, but the queue stopped at b
    const auto got = place_in_decode_group(full, {&a, &b, &c}, 1.05);
    CHECK(got == std::vector<int>{1, -1, -1});
    CHECK(full.engines[0].seq == 0);
    CHECK(full.engines[1].free_hbm == 100);
  }
}

TEST_CASE("level 1: the decode group with the smallest Σ tok_e that can hold the request") {
  cluster_snapshot snap;
  add_node(snap, 4, role::decode, 0, {100, 100});               // Σ 200
  add_node(snap, 5, role::decode, 0, {10, 150});                // Σ 160
  add_node(snap, 6, role::decode, 0, {1, 1}, /*free HBM*/ 10);  // Σ 2 but full
  const std::vector<node_snapshot*> groups{snap.find(4), snap.find(5), snap.find(6)};
  std::vector<uint64_t> totals{200, 160, 2};
  CHECK(select_decode_group(groups, totals, make_request(1, 10, 100, /*kv*/ 1000)) == 1);
  CHECK(select_decode_group(groups, totals, make_request(1, 10, 100, /*kv*/ 5)) == 2);
  totals = {200, 260, 2};
  CHECK(select_decode_group(groups, totals, make_request(1, 10, 100, 1000)) == 0);
  CHECK(select_decode_group(groups, totals, make_request(1, 10, 100, uint64_t(1) << 40)) == -1);
}

TEST_CASE("dualpath assign spreads decode load over groups and returns unplaceable requests in order") {
  cluster_snapshot snap;
  policy_params p;
  p.alpha_tokens = 1u << 20;
  p.beta_tokens = 1u << 20;
  add_node(snap, 1, role::prefill, 0, {0, 0, 0, 0});
  add_node(snap, 4, role::decode, 0, {0}, /*free HBM*/ 2500);
  add_node(snap, 5, role::decode, 0, {0}, /*free HBM*/ 2500);
  std::deque<request_info> waiting;
  for (uint64_t i = 0; i < 6; ++i) waiting.push_back(make_request(i, 100, /*len*/ 1000, /*kv*/ 1000));
  const auto out = make_policy("balanced")->assign(snap, 1, waiting, p);
  // Each DE holds two requests (2 × 1000 ≤ 2500); level 1 alternates between the groups.
  REQUIRE(out.size() == 4);
  int on4 = 0;
  for (const auto& a : out) on4 += a.de_node == 4;
  CHECK(on4 == 2);
  REQUIRE(waiting.size() == 2);
  CHECK(waiting[0].id == 4);
  CHECK(waiting[1].id == 5);
  // The PE load of the two returned requests was undone: 4 requests × 100 tokens remain.
  CHECK(snap.find(1)->total_tok() == 400);
}
