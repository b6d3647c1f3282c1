// Adaptive P/D in the simulator (docs/design.md §7.9): nodes drain, switch and serve in their new role; no
// turn is lost; a mix that turns over is served faster than by the split the run started from.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "core/cluster_config.hpp"
#include "core/trace.hpp"
#include "sim/sim.hpp"

using namespace dualpath;

namespace {

cluster_config paper_cluster(uint32_t p, uint32_t d) {
  cluster_config c = load_cluster_config(DUALPATH_SOURCE_DIR "/bench/experiments/paper/ds660b_2p4d.toml");
  c.prefill_nodes = p;
  c.decode_nodes = d;
  return c;
}

// Explore then edit (bench/experiments/adaptive_pd.py's "shift"): long appends and short answers, then short
// appends and long generations.
std::vector<sim::sim_agent> shift_agents(uint32_t n, uint32_t turns, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  auto between = [&](uint32_t lo, uint32_t hi) { return uint32_t(lo + rng() % (hi - lo + 1)); };
  std::vector<sim::sim_agent> out;
  for (uint32_t a = 0; a < n; ++a) {
    trajectory t;
    t.rounds.push_back({between(6000, 12000), between(20, 80), 0, 0, {}});
    for (uint32_t r = 1; r < turns; ++r) {
      if (r < turns / 2) t.rounds.push_back({between(2000, 6000), between(20, 80), 0, 0, {}});
      else t.rounds.push_back({between(100, 400), between(600, 1600), 0, 0, {}});
    }
    for (auto& r : t.rounds) r.keep = r.gen;
    sim::sim_agent s;
    s.agent = a;
    s.turns = t.turns();
    out.push_back(std::move(s));
  }
  return out;
}

sim::sim_result simulate(const cluster_config& c, std::vector<sim::sim_agent> agents) {
  sim::sim_options o;
  o.config = c;
  o.policy = "dualpath";
  o.agents = std::move(agents);
  return sim::run_sim(o);
}

}  // namespace

TEST_CASE("a shifting mix: nodes move both ways, each after draining, and the run beats its starting split") {
  cluster_config c = paper_cluster(2, 4);
  const auto fixed = simulate(c, shift_agents(512, 12));
  c.adaptive = true;
  const auto adaptive = simulate(c, shift_agents(512, 12));
  const auto& s = adaptive.summary;
  CHECK(s.turns == 512u * 12);
  CHECK(s.failed_turns == 0);
  CHECK(adaptive.adaptive);
  CHECK(fixed.role_switches.empty());
  REQUIRE(adaptive.role_switches.size() >= 2);
  uint32_t prefill = c.prefill_nodes, to_prefill = 0, to_decode = 0;
  double last_done = 0, decided = -1;
  for (const auto& m : adaptive.role_switches) {
    // One move (of one or more nodes) at a time, then the cooldown.
    if (m.decided_s != decided) CHECK(m.decided_s >= last_done + c.planner_cooldown_s - 1e-9);
    decided = m.decided_s;
    CHECK(m.drained_s >= m.decided_s);
    CHECK(m.done_s == doctest::Approx(m.drained_s + c.planner_switch_s));
    CHECK(m.node < c.total_nodes());
    CHECK(!m.why.empty());
    (m.to_prefill ? to_prefill : to_decode) += 1;
    prefill = m.to_prefill ? prefill + 1 : prefill - 1;
    CHECK(prefill >= 1);
    CHECK(prefill < c.total_nodes());
    last_done = std::max(last_done, m.done_s);
  }
  CHECK(to_prefill >= 1);  // the explore phase asks for prefill
  CHECK(to_decode >= 1);   // the edit phase for decode
  CHECK(adaptive.final_prefill_nodes == prefill);
  // Simulated time is deterministic: the same run gives the same moves.
  const auto again = simulate(c, shift_agents(512, 12));
  CHECK(again.summary.jct_s == s.jct_s);
  CHECK(again.role_switches.size() == adaptive.role_switches.size());
  CHECK(s.jct_s < 0.85 * fixed.summary.jct_s);
}

TEST_CASE("a light load moves nothing") {
  cluster_config c = paper_cluster(2, 4);
  c.adaptive = true;
  const auto r = simulate(c, shift_agents(4, 6));
  CHECK(r.summary.failed_turns == 0);
  CHECK(r.role_switches.empty());
  CHECK(r.final_prefill_nodes == 2);
}

TEST_CASE("the planner's keys are checked") {
  cluster_config c = paper_cluster(2, 4);
  c.adaptive = true;
  c.pe_group_nodes = 2;
  CHECK_THROWS_WITH_AS(validate_cluster_config(c, "t"), doctest::Contains("planner.adaptive"), user_error);
  c = paper_cluster(2, 4);
  c.planner_low = 0.95;
  CHECK_THROWS_WITH_AS(validate_cluster_config(c, "t"), doctest::Contains("planner.low"), user_error);
  CHECK_THROWS_WITH_AS(parse_cluster_config("[planner]\nadaptiv = true\n", "f.toml"), doctest::Contains("adaptiv"),
                       user_error);
}
