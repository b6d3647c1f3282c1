// `dualpath bench sim`: how fast the simulator runs a cluster (docs/design.md §17): simulated turns and
// scheduling decisions per wall second, events per second and the process's peak memory.
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "apps/bench_command.hpp"
#include "apps/sim_runs.hpp"

namespace {

using namespace dualpath;

struct options {
  std::string cluster_file;
  cli::cluster_overrides overrides;
  cli::workload_options workload;
  cli::sim_flags flags;
  std::string policy = "dualpath";
};

struct result {
  options o;
  cluster_config config;
  sim::sim_result r;
  double total_wall_s = 0;  // trace generation included
  double peak_rss_gb = 0;

  double per_s(double n) const { return r.counters.wall_s > 0 ? n / r.counters.wall_s : 0; }

  std::string to_text() const {
    const auto& c = r.counters;
    return fmt::format(
        "{}P{}D x {} GPUs, {} agents ({}), policy {}\n"
        "simulated {:.0f} s (JCT) in {:.1f} s of event loop, {:.1f} s wall in all\n"
        "turns {} ({:.0f}/s)  decisions {} ({:.2f}M/s)  events {} ({:.2f}M/s)  peak RSS {:.2f} GB\n",
        config.prefill_nodes, config.decode_nodes, config.engines_per_node, o.workload.agents,
        o.workload.preset.empty() ? o.workload.trace_file : o.workload.preset, o.policy, c.sim_s, c.wall_s,
        total_wall_s, r.summary.turns, per_s(double(r.summary.turns)), c.decisions, per_s(double(c.decisions)) / 1e6,
        c.events, per_s(double(c.events)) / 1e6, peak_rss_gb);
  }
  std::string to_json() const {
    const auto& c = r.counters;
    nlohmann::json j{{"prefill_nodes", config.prefill_nodes},
                     {"decode_nodes", config.decode_nodes},
                     {"gpus_per_node", config.engines_per_node},
                     {"agents", o.workload.agents},
                     {"policy", o.policy},
                     {"turns", r.summary.turns},
                     {"jct_s", r.summary.jct_s},
                     {"event_loop_wall_s", c.wall_s},
                     {"total_wall_s", total_wall_s},
                     {"turns_per_s", per_s(double(r.summary.turns))},
                     {"decisions_per_s", per_s(double(c.decisions))},
                     {"events_per_s", per_s(double(c.events))},
                     {"events", c.events},
                     {"peak_rss_gb", peak_rss_gb}};
    return j.dump(2) + "\n";
  }
};

result run(const options& o) {
  const auto start = std::chrono::steady_clock::now();
  result out;
  out.o = o;
  out.config = cli::sim_cluster(o.cluster_file, o.overrides);
  cli::check_workload_options(o.workload, false);
  out.r = cli::simulate(out.config, o.flags, o.policy, o.workload, o.policy, true);
  out.total_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  out.peak_rss_gb = double(u.ru_maxrss) * 1024 / 1e9;  // ru_maxrss is in KiB on Linux
  return out;
}

void setup(CLI::App& root) {
  auto [cmd, opt] =
      cli::add_bench<options>(root, "sim", "Simulator speed: turns, decisions and events per wall second", run);
  opt->workload.preset = "64k";
  opt->workload.agents = 2048;
  cmd->add_option("--cluster", opt->cluster_file, "Cluster file (TOML); default: the paper's DS 660B 2P4D cluster");
  cli::add_cluster_overrides(cmd, opt->overrides);
  cli::add_workload_options(cmd, opt->workload);
  cli::add_sim_flags(cmd, opt->flags);
  cmd->add_option("--policy", opt->policy, "Run policy to simulate")->capture_default_str();
}

}  // namespace

DUALPATH_COMMAND(setup);
