// `dualpath bench schedule`: µs per scheduling decision on a synthetic 1152-engine cluster.
#include "apps/command_registry.hpp"
#include "bench/schedule_bench.hpp"

namespace {

void setup(CLI::App& root) {
  auto& bench = dualpath::cli::group(root, "bench", "Benchmarks");
  auto* cmd = bench.add_subcommand("schedule", "Scheduling decisions per second on a synthetic cluster (one core)");
  auto opt = std::make_shared<dualpath::bench::schedule_bench_options>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("--engines", opt->engines, "Engines in the cluster (8 per node, one third prefill)")
      ->capture_default_str();
  cmd->add_option("--requests", opt->requests, "Requests to schedule")->capture_default_str();
  cmd->add_option("--policy", opt->policy, "dualpath | basic | round_robin | split")->capture_default_str();
  cmd->add_option("--repeats", opt->repeats, "Full runs (the median is reported)")->capture_default_str();
  cmd->add_option("--seed", opt->seed, "Seed of the synthetic requests")->capture_default_str();
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->callback([opt, json] {
    const auto r = dualpath::bench::run_schedule_bench(*opt);
    dualpath::cli::print(*json ? r.to_json() : r.to_text());
  });
}

}  // namespace

DUALPATH_COMMAND(setup);
