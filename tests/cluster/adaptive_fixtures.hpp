#pragma once
// What the adaptive P/D runtime tests share (docs/design.md §7.9): agents of a fixed append / answer mix, a
// small cluster whose planner moves one node at most, and the check of that move.
#include <doctest/doctest.h>

#include "runtime_fixtures.hpp"
#include "tests/cluster/cli_run.hpp"

namespace adaptive_fixtures {

using namespace runtime_fixtures;  // with dualpath, dualpath::cluster and fs

inline std::vector<agent_script> shaped(uint32_t agents, uint32_t turns, uint32_t append, uint32_t gen) {
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

inline cluster_config adaptive(const fs::path& dir, uint32_t prefill, uint32_t decode) {
  cluster_config c = small_cluster(dir, decode);
  c.prefill_nodes = prefill;
  c.snic_gb_per_s = 1;  // compute-bound: what the planner weighs is prefill and decode work
  c.adaptive = true;
  c.planner_window_s = 0.3;
  c.planner_sustain = 1;
  c.planner_cooldown_s = 60;  // one move per run: the test looks at that one
  return c;
}

// The first workload of adaptive_run_test: long appends and 2-token answers, which call for a decode node to
// move to prefill on any machine.
inline cluster_config prefill_heavy(const fs::path& dir) {
  cluster_config c = adaptive(dir, 1, 2);
  // The prefill engine is busy 0.55-0.9 of each window here and decode's pressure is 0.00-0.02, but on a
  // machine shared with other tests every step between passes slows too, and prefill read under 0.5 in every
  // window of 1 CI run in about 10 (no move). A quarter still tells the two roles' loads apart by 10x.
  c.planner_high = 0.25;
  c.planner_low = 0.2;
  // Decode's pressure is its slots and HBM, both small. TPOT stays out of it: a 2-token answer's TPOT is its
  // hand-off gap, over 0.1 s on a loaded machine, which read as decode pressure and kept the node (1 run in
  // about 20 under ctest -j2).
  c.planner_tpot_slo_s = 1e6;
  c.hbm_gb = 0.128;  // the agents' KV stays under 0.1 of decode HBM all run: the move is called for throughout
  return c;
}

// Both workloads run this many agents.
constexpr uint32_t workload_agents = 4;

// Its agents: long appends, 2-token answers, 36 turns each so that the run goes on well past the move's drain
// (decided near 0.4 s, drained near 0.85 s; with 24, runs of 1.2-1.6 s left as little as 0.37 s after it).
constexpr uint32_t prefill_heavy_turns = 36, prefill_heavy_total = workload_agents * prefill_heavy_turns;
inline std::vector<agent_script> prefill_heavy_agents() { return shaped(workload_agents, prefill_heavy_turns, 150, 2); }

// The second workload: short appends and 80-token answers, which call for a prefill node to move to decode.
inline cluster_config decode_heavy(const fs::path& dir) {
  cluster_config c = adaptive(dir, 2, 1);
  c.model_traffic_kb = 4;       // decode engines' all-to-all: a decode peer's buffer moves with the roles
  c.planner_tpot_slo_s = 1e-5;  // every decode step is over this SLO: decode asks for nodes
  c.planner_low = 0.8;          // prefill (under 0.25 of its engines here) gives a node up even on a slow machine
  return c;
}

// Its agents, 32 turns each: the move is decided after the first wave (about 0.4 s) and drained near 0.9 s, and
// the run must go on past it. With 12, a faster decode step ended the run before the switch; with 20, runs of
// 1.2-1.9 s left 0.3-0.5 s after the drain, and with a faster runtime (idle CAF workers blocking,
// docs/experiments.md) one run in four made no move, likely so.
constexpr uint32_t decode_heavy_turns = 32, decode_heavy_total = workload_agents * decode_heavy_turns;
inline std::vector<agent_script> decode_heavy_agents() { return shaped(workload_agents, decode_heavy_turns, 20, 80); }

// A run of `dualpath` on cluster `c`, embedded or with one process per node (the built `dualpath node`).
inline run_summary run_adaptive(const cluster_config& c, std::vector<agent_script> scripts, bool processes) {
  run_options o;
  o.config = c;
  o.policy = "dualpath";
  o.scripts = std::move(scripts);
  if (processes) {
    o.processes = true;
    o.node_program = dualpath::test::binary();
  }
  return run_cluster(o);
}

inline void check_move(const run_summary& s, bool to_prefill, uint32_t final_prefill) {
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

}  // namespace adaptive_fixtures
