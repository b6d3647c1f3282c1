#pragma once
#include <chrono>
// What the runtime tests share: a small storage-bound cluster of the tiny model, and
// agent scripts whose turns are all verified against a full recompute.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cluster/cluster.hpp"
#include "core/trace.hpp"
#include "tests/common/scratch_dir.hpp"

namespace runtime_fixtures {

using namespace dualpath;
using namespace dualpath::cluster;
using clock_type = std::chrono::steady_clock;
namespace fs = std::filesystem;

inline cluster_config small_cluster(const fs::path& dir, uint32_t decode_nodes) {
  cluster_config c;
  c.model = "tiny";
  c.backend = backend_kind::cpu;
  c.seed = 3;
  c.prefill_nodes = 1;
  c.decode_nodes = decode_nodes;
  c.engines_per_node = 1;
  c.block_tokens = 16;
  c.snic_gb_per_s = 0.004;  // storage-bound, so read queues build and both paths get used
  c.dram_buffer_gb = 0.032;
  c.hbm_gb = 0.032;
  c.store_dir = (dir / "store").string();
  c.timeout_s = 30;
  return c;
}

// Every turn of the run came back right: `turns` in all, `verified` of them checked against a full
// recompute, none failed and none disagreed.
inline void check_turns_right(const run_summary& s, uint64_t turns, uint64_t verified) {
  CHECK(s.turns == turns);
  CHECK(s.failed_turns == 0);
  CHECK(s.verified_turns == verified);
  CHECK(s.mismatched_turns == 0);
}

inline std::vector<agent_script> scripts(uint32_t agents, uint32_t turns, uint32_t verify_every) {
  std::vector<agent_script> out;
  for (uint32_t a = 0; a < agents; ++a) {
    trajectory t;
    for (uint32_t r = 0; r < turns; ++r) {
      trace_round round;
      round.append = 40 + 7 * a + 5 * r;
      round.gen = 6;
      round.keep = 6;
      t.rounds.push_back(round);
    }
    agent_script s;
    s.agent = a;
    s.turns = t.turns();
    s.verify_every = verify_every;
    s.seed = 11;
    out.push_back(s);
  }
  return out;
}

// 2P2D over tcp, one process per node, every turn verified, progress every 0.2 s: the cluster of the
// node-loss and rejoin tests, which say how its nodes start. A wait on a lost node's actors ends (times
// out) within 2 `timeout_s`.
inline run_options two_by_two_processes(const fs::path& dir, uint32_t agents, uint32_t turns, double timeout_s) {
  run_options o;
  o.config = small_cluster(dir, 2);
  o.config.prefill_nodes = 2;
  o.config.provider = "tcp";
  o.config.timeout_s = timeout_s;
  o.policy = "dualpath";
  o.processes = true;
  o.scripts = scripts(agents, turns, 1);
  o.progress_every_s = 0.2;
  return o;
}

}  // namespace runtime_fixtures
