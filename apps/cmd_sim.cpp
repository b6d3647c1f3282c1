// `dualpath sim`: the same workload and report as `dualpath run`, on the discrete-event simulator
// (docs/design.md §17), at any cluster size. Without --cluster it simulates the paper's DS 660B 2P4D cluster.
#include <fstream>

#include "apps/command_registry.hpp"
#include "apps/sim_runs.hpp"
#include "core/status.hpp"
#include "report/turn_timeline.hpp"

namespace {

using namespace dualpath;

struct sim_args {
  cli::workload_options workload;
  cli::serving_options serving;
  cli::cluster_overrides overrides;
  cli::sim_flags flags;
  std::string cluster_file;
  std::string timeline;  // --timeline: every turn of every run, a JSON line each
};

void sim_command(const sim_args& a) {
  const cluster_config config = cli::sim_cluster(a.cluster_file, a.overrides);
  cli::check_workload_options(a.workload, !a.serving.aps_sweep.empty());
  const auto policies = cli::chosen_policies(a.serving, {config.policy});
  std::ofstream timeline;
  if (!a.timeline.empty()) {
    timeline.open(a.timeline, std::ios::trunc);
    if (!timeline) throw user_error("--timeline: cannot write '" + a.timeline + "'");
  }
  cli::serve(a.serving, a.workload, policies,
             [&](const std::string& policy, const cli::workload_options& w, const std::string& label) {
               auto r = cli::simulate(config, a.flags, policy, w, label, a.serving.quiet);
               if (timeline.is_open()) {
                 report::write_timeline(timeline, label, r.turns);
                 timeline.flush();
                 if (!timeline) throw user_error("--timeline: writing '" + a.timeline + "' failed");
               }
               cli::policy_run out{std::move(r.summary)};
               sim::add_counters(out.extra, r);
               return out;
             });
}

void setup(CLI::App& root) {
  auto a = std::make_shared<sim_args>();
  auto* cmd = root.add_subcommand(
      "sim", "Simulate a cluster (any size) on an agent trace with the real scheduler; same report as run");
  cmd->add_option("--cluster", a->cluster_file, "Cluster file (TOML); default: the paper's DS 660B 2P4D cluster");
  cli::add_cluster_overrides(cmd, a->overrides);
  cli::add_workload_options(cmd, a->workload);
  cli::add_serving_options(cmd, a->serving);
  cli::add_sim_flags(cmd, a->flags);
  cmd->add_option(
      "--timeline", a->timeline,
      "Write every turn of every run here, a JSON line each: engines, read path, tokens, where its time went");
  cmd->callback([a] { sim_command(*a); });
}

}  // namespace

DUALPATH_COMMAND(setup);
