// `dualpath bench schedule`: µs per scheduling decision on a synthetic 1152-engine cluster; with --actor, the
// scheduler actor's assignments per second with leaders and a client driving it (apps/schedule_actor_bench.hpp).
#include "apps/bench_command.hpp"
#include "apps/schedule_actor_bench.hpp"
#include "bench/schedule_bench.hpp"
#include "core/modes.hpp"
#include "core/names.hpp"

namespace {

namespace b = dualpath::bench;
namespace cli = dualpath::cli;

struct schedule_command {
  b::schedule_bench_options decisions;
  bool actor = false;
  uint32_t in_flight = 512;
  double timeout_s = 120;
};

struct printed {  // either bench's result, already rendered
  std::string text, json;
  std::string to_text() const { return text; }
  std::string to_json() const { return json; }
};

printed run(const schedule_command& o) {
  if (!o.actor) {
    const auto r = b::run_schedule_bench(o.decisions);
    return {r.to_text(), r.to_json()};
  }
  cli::schedule_actor_bench_options a;
  a.engines = o.decisions.engines;
  a.requests = o.decisions.requests;
  a.policy = o.decisions.policy;
  a.repeats = o.decisions.repeats;
  a.seed = o.decisions.seed;
  a.in_flight = o.in_flight;
  a.timeout_s = o.timeout_s;
  const auto r = cli::run_schedule_actor_bench(a);
  return {r.to_text(), r.to_json()};
}

void setup(CLI::App& root) {
  auto [cmd, opt] = cli::add_bench<schedule_command>(
      root, "schedule", "Scheduling decisions per second on a synthetic cluster (one core)", run);
  auto& d = opt->decisions;
  cmd->add_option("--engines", d.engines, "Engines in the cluster (8 per node, one third prefill)")
      ->capture_default_str();
  cmd->add_option("--requests", d.requests, "Requests to schedule")->capture_default_str();
  cmd->add_option("--policy", d.policy,
                  "Scheduler policy: " + dualpath::join_names(dualpath::scheduler_policy_names(), " | "))
      ->capture_default_str();
  cmd->add_option("--repeats", d.repeats, "Full runs (the median is reported)")->capture_default_str();
  cmd->add_option("--seed", d.seed, "Seed of the synthetic requests")->capture_default_str();
  cmd->add_flag("--actor", opt->actor,
                "Drive the real scheduler actor with encoded submits, reports and fetches from a leader per node");
  cmd->add_option("--in-flight", opt->in_flight, "With --actor: submits the client keeps unanswered")
      ->capture_default_str();
  cmd->add_option("--timeout", opt->timeout_s, "With --actor: seconds a run may take before it fails")
      ->capture_default_str();
}

}  // namespace

DUALPATH_COMMAND(setup);
