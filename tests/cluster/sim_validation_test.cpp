// The simulator against the runtime (docs/design.md §17): the same storage-bound cluster (modeled DS 27B,
// capped SNICs, real KV through libfabric) and the same agents, run for real and simulated. The two must
// agree on JCT within 10%, on the TTFT mean within 15% (the p50 within 30% on this small sample), and on
// the share of turns that took the DE path.
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

double de_share(const actors::run_summary& s) {
  const double all = double(s.path_pe + s.path_de + s.path_split);
  return all > 0 ? double(s.path_de) / all : 0;
}

}  // namespace

TEST_CASE("run and sim agree on JCT, TTFT and the path split for basic, layerwise and dualpath") {
  test::scratch_dir dir;
  const auto turns = workload();
  for (const std::string policy : {"basic", "layerwise", "dualpath"}) {
    CAPTURE(policy);
    actors::run_options ro;
    ro.config = test::storage_bound_cluster((dir.path / policy).string());
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
    const auto run = actors::run_cluster(ro);
    const auto sim = sim::run_sim(so).summary;
    REQUIRE(run.failed_turns == 0);
    REQUIRE(sim.failed_turns == 0);
    CHECK(sim.turns == run.turns);
    MESSAGE(policy << ": JCT run " << run.jct_s << " s, sim " << sim.jct_s << " s; TTFT mean run " << run.ttft.mean
                   << " s, sim " << sim.ttft.mean << " s, p50 run " << run.ttft.p50 << " s, sim " << sim.ttft.p50
                   << " s; DE share run " << de_share(run) << ", sim " << de_share(sim));
    CHECK(std::fabs(sim.jct_s / run.jct_s - 1) <= 0.10);
    // 144 turns is a small sample for a median that sits where queueing makes the distribution steep:
    // run-to-run the runtime's own basic p50 moves by 25% (1.12-1.40 s). The mean is steadier and
    // holds the 15%; the storage-bound experiment (bench/experiments/sim_validation.sh, 320 turns)
    // holds the p50 within 15% too.
    CHECK(std::fabs(sim.ttft.mean / run.ttft.mean - 1) <= 0.15);
    CHECK(std::fabs(sim.ttft.p50 / run.ttft.p50 - 1) <= 0.30);
    CHECK(std::fabs(de_share(sim) - de_share(run)) <= 0.15);
    CHECK(sim.hit_blocks == run.hit_blocks);  // the same blocks were found in storage
  }
}
