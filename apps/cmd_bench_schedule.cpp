// `dualpath bench schedule`: µs per scheduling decision on a synthetic 1152-engine cluster.
#include "apps/bench_command.hpp"
#include "bench/schedule_bench.hpp"
#include "core/modes.hpp"
#include "core/names.hpp"

namespace {

void setup(CLI::App& root) {
  namespace b = dualpath::bench;
  auto [cmd, opt] = dualpath::cli::add_bench<b::schedule_bench_options>(
      root, "schedule", "Scheduling decisions per second on a synthetic cluster (one core)", b::run_schedule_bench);
  cmd->add_option("--engines", opt->engines, "Engines in the cluster (8 per node, one third prefill)")
      ->capture_default_str();
  cmd->add_option("--requests", opt->requests, "Requests to schedule")->capture_default_str();
  cmd->add_option("--policy", opt->policy,
                  "Scheduler policy: " + dualpath::join_names(dualpath::scheduler_policy_names(), " | "))
      ->capture_default_str();
  cmd->add_option("--repeats", opt->repeats, "Full runs (the median is reported)")->capture_default_str();
  cmd->add_option("--seed", opt->seed, "Seed of the synthetic requests")->capture_default_str();
}

}  // namespace

DUALPATH_COMMAND(setup);
