// Adaptive P/D's rule (schedule/role_planner.hpp) on hand-made windows.
#include <doctest/doctest.h>

#include "schedule/role_planner.hpp"

using namespace dualpath::schedule;

namespace {

// 2P4D of 8 engines, a 2-s window.
role_load window(double prefill_busy, double backlog_s_per_engine, double decode_hbm) {
  role_load l;
  l.prefill_nodes = 2;
  l.decode_nodes = 4;
  l.engines_per_node = 8;
  l.window_s = 2;
  l.prefill_busy_s = prefill_busy * 16 * 2;
  l.prefill_backlog_s = backlog_s_per_engine * 16;
  l.decode_hbm = decode_hbm;
  return l;
}

}  // namespace

TEST_CASE("pressures: busy time plus backlog over the window's capacity; decode's largest use plus its queue") {
  role_load l = window(0.5, 1.0, 0.3);
  CHECK(prefill_pressure(l) == doctest::Approx(0.5 + 1.0 / 2));
  l.decode_slots = 0.4;
  CHECK(decode_pressure(l, 0.05) == doctest::Approx(0.4));
  l.tpot_s = 0.04;
  CHECK(decode_pressure(l, 0.05) == doctest::Approx(0.8));
  l.decode_waiting = 0.5;
  CHECK(decode_pressure(l, 0.05) == doctest::Approx(1.3));
}

TEST_CASE("a prefill backlog takes decode nodes while the decode nodes left stay under low") {
  const planner_params p;  // high 0.9, low 0.5
  // 2P4D, decode at 0.25: 3P3D puts decode at 0.25 x 4/3 x 3/2 = 0.5, not under low: no move.
  CHECK(plan_roles(window(1.0, 2.0, 0.25), p).move == role_move::none);
  // Decode at 0.2: 3P3D gives 0.4, 4P2D 0.2 x 2 x 2 = 0.8: one node.
  auto plan = plan_roles(window(1.0, 2.0, 0.2), p);
  CHECK(plan.move == role_move::to_prefill);
  CHECK(plan.nodes == 1);
  // Decode at 0.05: two nodes would leave it at 0.2 and prefill (2.0 over 3 nodes: 1.33) still needs the second;
  // a third would leave one decode node at 0.05 x 4 x 2.5 = 0.5.
  plan = plan_roles(window(1.0, 2.0, 0.05), p);
  CHECK(plan.move == role_move::to_prefill);
  CHECK(plan.nodes == 2);
  // No backlog, nothing to move.
  CHECK(plan_roles(window(0.5, 0.0, 0.1), p).move == role_move::none);
}

TEST_CASE("no more nodes move than the receiving role needs") {
  const planner_params p;
  // Prefill at 0.95, decode empty: one node brings prefill to 0.63, under high: the second is not needed.
  const auto plan = plan_roles(window(0.95, 0.0, 0.0), p);
  CHECK(plan.move == role_move::to_prefill);
  CHECK(plan.nodes == 1);
}

TEST_CASE("decode at its limit takes a prefill node when prefill is light; both loaded, nothing moves") {
  const planner_params p;
  // 2 prefill nodes at 0.2: with one, 0.4 < 0.5.
  const auto plan = plan_roles(window(0.2, 0.0, 0.95), p);
  CHECK(plan.move == role_move::to_decode);
  CHECK(plan.nodes == 1);
  CHECK(plan_roles(window(0.3, 0.0, 0.95), p).move == role_move::none);  // one node would be at 0.6
  CHECK(plan_roles(window(1.0, 3.0, 0.95), p).move == role_move::none);  // the cluster is simply full
}

TEST_CASE("a role keeps its last node") {
  planner_params p;
  role_load l = window(0.1, 0.0, 1.0);
  l.prefill_nodes = 1;
  CHECK(plan_roles(l, p).move == role_move::none);
  l = window(1.0, 5.0, 0.0);
  l.decode_nodes = 1;
  CHECK(plan_roles(l, p).move == role_move::none);
  p.min_nodes = 2;
  l = window(1.0, 5.0, 0.0);
  l.decode_nodes = 2;
  CHECK(plan_roles(l, p).move == role_move::none);
}

TEST_CASE("describe names the split and both pressures") {
  const auto s = describe(window(1.0, 2.0, 0.4), planner_params{});
  CHECK(s.find("2P4D") == 0);
  CHECK(s.find("prefill 2.00") != std::string::npos);
  CHECK(s.find("decode 0.40") != std::string::npos);
}

TEST_CASE("one move at most doubles the receiving role, however large the cluster") {
  // 132P12D of one engine each, prefill nearly idle (0.02) and decode 10x over: the pressures alone would
  // send about 120 prefill nodes to decode (prefill then reads 0.02 x 132/12 = 0.22, decode 10 x 12/132 = 0.91).
  role_load l;
  l.prefill_nodes = 132;
  l.decode_nodes = 12;
  l.window_s = 2;
  l.prefill_busy_s = 0.02 * 132 * 2;
  l.decode_hbm = 1.0;
  l.decode_waiting = 9.0;
  planner_params p;
  auto plan = plan_roles(l, p);
  CHECK(plan.move == role_move::to_decode);
  CHECK(plan.nodes == 12);  // decode doubles
  p.max_growth = 100;
  CHECK(plan_roles(l, p).nodes > 100);  // what the pressures alone allow
  // One receiving node still takes one more.
  role_load small = l;
  small.prefill_nodes = 4;
  small.decode_nodes = 1;
  small.prefill_busy_s = 0.02 * 4 * 2;
  CHECK(plan_roles(small, planner_params{}).nodes == 1);
}
