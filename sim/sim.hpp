#pragma once
// The cluster simulator (docs/design.md §17): a discrete-event model of a PD-disaggregated cluster that
// decides with the runtime's own code (schedule/ policies, batcher and calibration, core/ cost model, the
// report of report/) and models only what moves: storage NIC queues, DRAM slots, HBM, the layer-wise pass
// in closed form, decode steps and write-back. One event per load, pass, hand-off, decode step and turn,
// so the paper's 48P96D cluster runs on one core.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/cluster_config.hpp"
#include "core/trace.hpp"
#include "report/run_report.hpp"
#include "schedule/role_planner.hpp"

namespace dualpath::sim {

// One agent: its turns, replayed back to back from `start_s`.
struct sim_agent {
  uint32_t agent = 0;
  double start_s = 0;
  std::vector<turn_shape> turns;
  bool replay_tool_time = false;
  // Mooncake requests: a one-turn agent whose prompt is these 512-token blocks (equal id = equal prefix).
  std::vector<uint64_t> hash_ids;
};

// Where a decode node's write-back goes: through its SNIC at the SNIC's rate (as the paper's), or free.
enum class write_back : uint8_t { snic, free };

struct sim_progress {
  uint64_t turns_done = 0, turns_total = 0;
  double sim_s = 0, wall_s = 0;
};

struct sim_options {
  cluster_config config;
  std::string policy = "dualpath";  // a run policy name (core/modes.hpp)
  std::vector<sim_agent> agents;
  bool ep_lockstep = false;  // the prefill engines of a node finish each pass together (EP all-to-all); also
                             // when the cluster file sets ep_sync
  write_back writes = write_back::snic;
  // The scheduler's view keeps each charge until the engine counts the request (schedule/fresh_view, as the
  // runtime's); false: every report replaces the charges (a decode engine is blind to requests until hand-off).
  bool fresh_view = true;
  double window_s = 1.0;                                 // snic_over_time windows (docs/design.md §15)
  std::function<void(const sim_progress&)> on_progress;  // about once per wall second
};

struct sim_counters {
  uint64_t events = 0;
  uint64_t rounds = 0;     // scheduler rounds (a fetch by every prefill node that can take work)
  uint64_t decisions = 0;  // requests assigned
  uint64_t passes = 0, decode_steps = 0;
  double sim_s = 0;                   // simulated seconds until the last turn finished
  double wall_s = 0;                  // wall seconds of the event loop
  double attention_max_over_avg = 0;  // with ep_lockstep: mean over rounds of max/avg pass time in a group
};

// One move of adaptive P/D (docs/design.md §7.9), as the runtime records it too.
using role_switch = schedule::role_switch;

struct sim_result {
  report::run_summary summary;  // the same numbers `dualpath run` reports
  sim_counters counters;
  std::vector<uint64_t> snic_write_bytes;  // per node
  bool adaptive = false;                   // [planner] adaptive: the run could move nodes
  std::vector<role_switch> role_switches;
  uint32_t final_prefill_nodes = 0;        // the split the run ended with
  std::vector<report::turn_record> turns;  // every turn, in the order they finished
};

// Simulates the agents under one run policy. Throws user_error on a bad configuration or a policy name it
// does not know; a turn that can never fit (HBM, DRAM) fails like in the runtime, counted in the summary.
sim_result run_sim(const sim_options& options);

// {"sim": {...counters}} merged into a run's JSON object.
void add_counters(nlohmann::json& run, const sim_result& r);

}  // namespace dualpath::sim
