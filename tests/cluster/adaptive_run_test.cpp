// Adaptive P/D in the embedded runtime (docs/design.md §7.9): a node drains, changes role in place and serves
// in its new role; no turn is lost and every turn matches a full recompute. The planner's thresholds are set
// so that each workload's mix calls for the move on any machine: the test checks the switch, not the tuning.
#include <doctest/doctest.h>

#include "cluster/node_host.hpp"
#include "runtime_fixtures.hpp"

using namespace runtime_fixtures;  // with dualpath, dualpath::cluster and fs

namespace {

std::vector<agent_script> shaped(uint32_t agents, uint32_t turns, uint32_t append, uint32_t gen) {
  std::vector<agent_script> out;
  for (uint32_t a = 0; a < agents; ++a) {
    trajectory t;
    for (uint32_t r = 0; r < turns; ++r) {
      trace_round round;
      round.append = append + 3 * a + 2 * r;
      round.gen = gen;
      round.keep = gen;
      t.rounds.push_back(round);
    }
    agent_script s;
    s.agent = a;
    s.turns = t.turns();
    s.verify_every = 1;
    s.seed = 17;
    out.push_back(s);
  }
  return out;
}

cluster_config adaptive(const fs::path& dir, uint32_t prefill, uint32_t decode) {
  cluster_config c = small_cluster(dir, decode);
  c.prefill_nodes = prefill;
  c.snic_gb_per_s = 1;  // compute-bound: what the planner weighs is prefill and decode work
  c.adaptive = true;
  c.planner_window_s = 0.3;
  c.planner_sustain = 1;
  c.planner_cooldown_s = 60;  // one move per run: the test looks at that one
  return c;
}

run_summary run(const cluster_config& c, std::vector<agent_script> scripts) {
  run_options o;
  o.config = c;
  o.policy = "dualpath";
  o.scripts = std::move(scripts);
  return run_cluster(o);
}

void check_move(const run_summary& s, bool to_prefill, uint32_t final_prefill) {
  CHECK(s.adaptive);
  REQUIRE(s.role_switches.size() == 1);
  const auto& m = s.role_switches.front();
  MESSAGE("node " << m.node << " to " << std::string(m.to_prefill ? "prefill" : "decode") << ": decided " << m.decided_s
                  << " s, drained " << m.drained_s << " s, serving " << m.done_s << " s of a " << s.jct_s << "-s run ("
                  << m.why << ")");
  CHECK(m.to_prefill == to_prefill);
  CHECK(m.decided_s <= m.drained_s);
  CHECK(m.drained_s <= m.done_s);
  CHECK(m.done_s < s.jct_s);  // the run went on after the switch
  CHECK(s.final_prefill_nodes == final_prefill);
}

}  // namespace

TEST_CASE("adaptive P/D: long appends and short answers move a decode node to prefill, every turn verified") {
  test::scratch_dir dir;
  cluster_config c = adaptive(dir.path, 1, 2);
  c.planner_high = 0.5;  // the prefill engine is busy most of each window here; decode is nearly idle
  c.planner_low = 0.4;
  // Decode's pressure is its slots and HBM, both small. TPOT stays out of it: a 2-token answer's TPOT is its
  // hand-off gap, over 0.1 s on a loaded machine, which read as decode pressure and kept the node (1 run in
  // about 20 under ctest -j2).
  c.planner_tpot_slo_s = 1e6;
  c.hbm_gb = 0.128;  // the agents' KV stays under 0.1 of decode HBM all run: the move is called for throughout
  const auto s = run(c, shaped(4, 24, 150, 2));
  check_turns_right(s, 96, 96);
  check_move(s, true, 2);
}

TEST_CASE("adaptive P/D: short appends and long answers move a prefill node to decode, every turn verified") {
  test::scratch_dir dir;
  cluster_config c = adaptive(dir.path, 2, 1);
  c.model_traffic_kb = 4;       // decode engines' all-to-all: a decode peer's buffer moves with the roles
  c.planner_tpot_slo_s = 1e-5;  // every decode step is over this SLO: decode asks for nodes
  c.planner_low = 0.8;          // prefill (under 0.25 of its engines here) gives a node up even on a slow machine
  // 20 turns each: the move is decided after the first wave, and the run must go on past its drain (with 12,
  // a faster decode step ended the run before the switch).
  const auto s = run(c, shaped(4, 20, 20, 80));
  check_turns_right(s, 80, 80);
  check_move(s, false, 1);
}

TEST_CASE("adaptive P/D is refused where nodes cannot move: node processes and the server") {
  test::scratch_dir dir;
  cluster_config c = adaptive(dir.path, 1, 2);
  CHECK_THROWS_WITH_AS(prepare_run(c, "cluster file"), doctest::Contains("planner.adaptive"), user_error);
  c.ep_sync = true;
  CHECK_THROWS_WITH_AS(validate_cluster_config(c, "cluster file"), doctest::Contains("ep_sync"), user_error);
}
