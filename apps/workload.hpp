#pragma once
// The workload options `dualpath run` and `dualpath sim` share, and the agents they describe: turns from a
// trajectory trace, a Mooncake trace (one-turn agents at their timestamps) or a synthetic preset, with
// offline or Poisson arrivals. One parser, so both commands replay exactly the same agents.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "core/trace.hpp"
#include "report/run_report.hpp"

namespace dualpath::cli {

// When agents arrive: all at t = 0, or as a Poisson process of --aps agents per second.
enum class arrivals { offline, online };

struct workload_options {
  std::string trace_file, preset;
  arrivals mode = arrivals::offline;
  uint32_t agents = 0, max_turns = 0;
  double aps = 0;
  std::string aps_profile;  // online: "FROM_S:APS,..." instead of one rate (core/arrivals.hpp)
  double time_scale = 1;    // recorded timestamps × this (0.5 replays a trace twice as fast)
  uint64_t seed = 1;
  bool tool_time = false;
};

struct workload_agent {
  uint32_t index = 0;
  double start_s = 0;
  std::vector<turn_shape> turns;
  std::optional<mooncake_request> mooncake;  // the request a Mooncake agent replays
};

// Registers --trace, --preset, --agents, --max-turns, --mode, --aps, --aps-profile, --time-scale, --seed,
// --tool-time.
void add_workload_options(CLI::App* cmd, workload_options& w);
// Throws user_error on a bad combination (online without --aps, a non-positive time scale, ...).
void check_workload_options(const workload_options& w, bool sweep);
// `demo`: the small synthetic trace of the embedded default (6 agents of short turns).
std::vector<workload_agent> build_workload(const workload_options& w, bool demo);

// The serving options both commands share beyond the workload: policies, sweep, SLO, report.
struct serving_options {
  std::string policy, compare, report_file, aps_sweep;
  report::serving_slo slo;
  bool quiet = false;
};
void add_serving_options(CLI::App* cmd, serving_options& s);
// Only --aps-sweep, --slo-ttft, --slo-tpot, --report and --quiet (a command whose policy is not its own).
void add_report_options(CLI::App* cmd, serving_options& s);

std::vector<std::string> split_list(const std::string& s);
// The policies to run: --compare, else --policy, else `fallback`; every name checked before any run.
std::vector<std::string> chosen_policies(const serving_options& s, const std::vector<std::string>& fallback);

// One run of a policy over a workload, with what the command wants added to its JSON object.
struct policy_run {
  report::run_summary summary;
  nlohmann::json extra = nlohmann::json::object();
};
using run_policy_fn =
    std::function<policy_run(const std::string& policy, const workload_options& w, const std::string& label)>;

// Offline/online comparison or an --aps-sweep: runs, prints the table, writes the report, and throws
// user_error when a turn failed.
void serve(const serving_options& s, const workload_options& w, const std::vector<std::string>& policies,
           const run_policy_fn& run);

}  // namespace dualpath::cli
