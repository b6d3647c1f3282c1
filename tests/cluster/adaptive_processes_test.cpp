// Adaptive P/D across node processes (docs/design.md §7.9, §13): the moving node switches in its own process,
// every other process files it as switching and then its new actors in its new role, and the launcher's
// planner reads the prefill engines' busy time from the node processes' counters. Real processes, real
// sockets; every turn matches a full recompute.
#include <doctest/doctest.h>

#include "tests/cluster/adaptive_fixtures.hpp"

using namespace adaptive_fixtures;

TEST_CASE("adaptive P/D across node processes: a decode node moves to prefill, every turn verified") {
  test::scratch_dir dir;
  const auto s = run_adaptive(prefill_heavy(dir.path), shaped(4, 24, 150, 2), true);
  check_turns_right(s, 96, 96);
  check_move(s, true, 2);
  CHECK(s.lost_nodes == 0);
}

TEST_CASE("adaptive P/D across node processes: a prefill node moves to decode beside an all-to-all peer") {
  test::scratch_dir dir;
  cluster_config c = adaptive(dir.path, 2, 1);
  c.model_traffic_kb = 4;       // the decode engines' all-to-all: the other processes must name the new peer
  c.planner_tpot_slo_s = 1e-5;  // every decode step is over this SLO: decode asks for nodes
  c.planner_low = 0.8;          // prefill gives a node up even on a slow machine
  const auto s = run_adaptive(c, shaped(4, 20, 20, 80), true);
  check_turns_right(s, 80, 80);
  check_move(s, false, 1);
  CHECK(s.lost_nodes == 0);
}
