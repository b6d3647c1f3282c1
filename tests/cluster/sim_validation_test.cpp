// The simulator against the runtime (docs/design.md §17): the same storage-bound cluster (modeled DS 27B,
// capped SNICs, real KV through libfabric) and the same agents, run for real and simulated. What load on
// the machine cannot change is asserted: both finish every turn, find the same blocks in storage, and split
// the turns between the read paths alike. How close their times are is measured, not asserted (a shared
// machine slows the runtime, never the simulator): bench/experiments/sim_validation.sh and
// docs/experiments.md hold that table.
#include <doctest/doctest.h>

#include <cmath>

#include "cluster/cluster.hpp"
#include "core/trace.hpp"
#include "sim/sim.hpp"
#include "tests/common/scratch_dir.hpp"
#include "tests/common/storage_bound_cluster.hpp"

using namespace dualpath;

namespace {

// 24 agents of the storage-bound experiment's trace, 6 turns each.
std::vector<std::vector<turn_shape>> workload() {
  std::vector<std::vector<turn_shape>> out;
  for (const auto& t : read_trajectories(DUALPATH_SOURCE_DIR "/bench/experiments/storage_bound.jsonl")) {
    auto turns = t.turns();
    turns.resize(std::min<size_t>(turns.size(), 6));
    out.push_back(std::move(turns));
    if (out.size() == 24) break;
  }
  return out;
}

// The same cluster and agents for `run` and for `sim`.
std::pair<cluster::run_options, sim::sim_options> both(const cluster_config& config, const std::string& policy,
                                                       const std::vector<std::vector<turn_shape>>& turns) {
  cluster::run_options ro;
  ro.config = config;
  ro.policy = policy;
  sim::sim_options so;
  so.config = ro.config;
  so.policy = policy;
  so.writes = sim::write_back::snic;  // the runtime paces write-back through the decode node's SNIC
  for (uint32_t a = 0; a < turns.size(); ++a) {
    actors::agent_script s;
    s.agent = a;
    s.turns = turns[a];
    s.seed = 5;
    ro.scripts.push_back(s);
    sim::sim_agent g;
    g.agent = a;
    g.turns = turns[a];
    so.agents.push_back(g);
  }
  return {ro, so};
}

double de_share(const report::run_summary& s) {
  const double all = double(s.path_pe + s.path_de + s.path_split);
  return all > 0 ? double(s.path_de) / all : 0;
}

}  // namespace

TEST_CASE("run and sim agree on turns, hit blocks and the path split for basic, layerwise and dualpath") {
  test::scratch_dir dir;
  const auto turns = workload();
  for (const std::string policy : {"basic", "layerwise", "dualpath"}) {
    CAPTURE(policy);
    auto [ro, so] = both(test::storage_bound_cluster((dir.path / policy).string()), policy, turns);
    const auto run = cluster::run_cluster(ro);
    const auto sim = sim::run_sim(so).summary;
    REQUIRE(run.failed_turns == 0);
    REQUIRE(sim.failed_turns == 0);
    CHECK(sim.turns == run.turns);
    MESSAGE(policy << ": JCT run " << run.jct_s << " s, sim " << sim.jct_s << " s; TTFT mean run " << run.ttft.mean
                   << " s, sim " << sim.ttft.mean << " s, p50 run " << run.ttft.p50 << " s, sim " << sim.ttft.p50
                   << " s; DE share run " << de_share(run) << ", sim " << de_share(sim));
    CHECK(run.jct_s > 0);
    CHECK(sim.jct_s > 0);
    CHECK(std::fabs(de_share(sim) - de_share(run)) <= 0.15);
    CHECK(sim.hit_blocks == run.hit_blocks);  // the same blocks were found in storage
  }
}

// One policy vocabulary (docs/design.md §7.7): a cluster file's [[schedule.switch]] names a scheduler
// policy in `run` and in `sim` alike, so the same file switches the same rule in both.
TEST_CASE("a [[schedule.switch]] switches the same scheduler policy in run and sim") {
  test::scratch_dir dir;
  auto turns = workload();
  turns.resize(8);
  for (auto& t : turns) t.resize(std::min<size_t>(t.size(), 3));
  auto config = test::storage_bound_cluster((dir.path / "switch").string());
  config.switches = {{0.0, "balanced_pe"}};  // from the start: every hit block through the prefill node's SNIC
  auto [ro, so] = both(config, "dualpath", turns);
  const auto run = cluster::run_cluster(ro);
  const auto sim = sim::run_sim(so).summary;
  REQUIRE(run.failed_turns == 0);
  REQUIRE(sim.failed_turns == 0);
  CHECK(run.turns == sim.turns);
  CHECK(run.path_de + run.path_split == 0);
  CHECK(sim.path_de + sim.path_split == 0);
  CHECK(run.path_pe == run.turns);
  CHECK(sim.path_pe == sim.turns);

  // A run policy's name is not a scheduler policy: both refuse it, naming the known ones.
  so.config.switches = ro.config.switches = {{1.0, "layerwise"}};
  CHECK_THROWS_WITH_AS(cluster::run_cluster(ro), doctest::Contains("known: balanced, balanced_pe"), user_error);
  CHECK_THROWS_WITH_AS(sim::run_sim(so), doctest::Contains("known: balanced, balanced_pe"), user_error);
  CHECK_THROWS_WITH_AS(sim::run_sim(so), doctest::Contains("'layerwise' is a run policy, which schedules with 'rr_pe'"),
                       user_error);
}
