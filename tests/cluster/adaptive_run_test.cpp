// Adaptive P/D in the embedded runtime (docs/design.md §7.9): a node drains, changes role in place and serves
// in its new role; no turn is lost and every turn matches a full recompute. The planner's thresholds are set
// so that each workload's mix calls for the move on any machine: the test checks the switch, not the tuning.
#include <doctest/doctest.h>

#include "cluster/node_host.hpp"
#include "tests/cluster/adaptive_fixtures.hpp"

using namespace adaptive_fixtures;

TEST_CASE("adaptive P/D: long appends and short answers move a decode node to prefill, every turn verified") {
  test::scratch_dir dir;
  // 36 turns each, so the run goes on well past the drain (near 0.85 s): with 24, runs of 1.2-1.5 s.
  const auto s = run_adaptive(prefill_heavy(dir.path), shaped(4, 36, 150, 2), false);
  check_turns_right(s, 144, 144);
  check_move(s, true, 2);
}

TEST_CASE("adaptive P/D: short appends and long answers move a prefill node to decode, every turn verified") {
  test::scratch_dir dir;
  cluster_config c = adaptive(dir.path, 2, 1);
  c.model_traffic_kb = 4;       // decode engines' all-to-all: a decode peer's buffer moves with the roles
  c.planner_tpot_slo_s = 1e-5;  // every decode step is over this SLO: decode asks for nodes
  c.planner_low = 0.8;          // prefill (under 0.25 of its engines here) gives a node up even on a slow machine
  // 32 turns each: the move is decided after the first wave (about 0.4 s) and the drain ends near 0.9 s, and the
  // run must go on past it. With 12, a faster decode step ended the run before the switch; with 20, runs of
  // 1.2-1.4 s left 0.3-0.5 s after the drain, and with a faster runtime (idle CAF workers blocking,
  // docs/experiments.md) one run in four made no move, likely so.
  const auto s = run_adaptive(c, shaped(4, 32, 20, 80), false);
  check_turns_right(s, 128, 128);
  check_move(s, false, 1);
}

TEST_CASE("adaptive P/D is refused where nodes cannot move: the server, and EP lockstep") {
  test::scratch_dir dir;
  cluster_config c = adaptive(dir.path, 1, 2);
  CHECK_THROWS_WITH_AS(prepare_run(c, "cluster file"), doctest::Contains("planner.adaptive"), user_error);
  CHECK_NOTHROW(prepare_run(c, "cluster file", true));
  c.ep_sync = true;
  CHECK_THROWS_WITH_AS(validate_cluster_config(c, "cluster file"), doctest::Contains("ep_sync"), user_error);
}
