// Adaptive P/D in the embedded runtime (docs/design.md §7.9): a node drains, changes role in place and serves
// in its new role; no turn is lost and every turn matches a full recompute. The planner's thresholds are set
// so that each workload's mix calls for the move on any machine: the test checks the switch, not the tuning.
#include <doctest/doctest.h>

#include "cluster/node_host.hpp"
#include "tests/cluster/adaptive_fixtures.hpp"

using namespace adaptive_fixtures;

TEST_CASE("adaptive P/D: long appends and short answers move a decode node to prefill, every turn verified") {
  test::scratch_dir dir;
  const auto s = run_adaptive(prefill_heavy(dir.path), prefill_heavy_agents(), false);
  check_turns_right(s, prefill_heavy_total, prefill_heavy_total);
  check_move(s, true, 2);
}

TEST_CASE("adaptive P/D: short appends and long answers move a prefill node to decode, every turn verified") {
  test::scratch_dir dir;
  const auto s = run_adaptive(decode_heavy(dir.path), decode_heavy_agents(), false);
  check_turns_right(s, decode_heavy_total, decode_heavy_total);
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
