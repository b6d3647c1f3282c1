// `dualpath run`: start the embedded cluster, replay agents, report. With no arguments it runs the
// embedded default: a storage-bound 1P2D cluster of the tiny model, basic vs dualpath vs oracle.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "cluster/cluster.hpp"
#include "apps/command_registry.hpp"
#include "core/status.hpp"
#include "core/trace.hpp"

namespace {

namespace fs = std::filesystem;
using namespace dualpath;

// The embedded default: SNICs capped so storage, not the tiny model's compute, is the bottleneck.
constexpr const char* default_cluster = R"(
[model]
name = "tiny"
backend = "cpu"
seed = 7

[cluster]
prefill_nodes = 1
decode_nodes = 2
engines_per_node = 1
block_tokens = 16

[hardware]
snic_gb_per_s = 0.004
cnic_gb_per_s = 0
dram_buffer_gb = 0.064
hbm_gb = 0.064
provider = "shm"

[storage]
dir = "dualpath-data"

[schedule]
policy = "dualpath"
quota_ms = 300
)";

struct run_args {
  std::string cluster_file, trace_file, preset, mode = "offline", policy, compare, report_file;
  uint32_t agents = 0, verify_every = 0, max_turns = 0;
  double aps = 0;
  uint64_t seed = 1;
  bool quiet = false, tool_time = false, keep_store = false, verify_every_set = false, processes = false;
  std::optional<uint16_t> control_port;
  std::string node_registry;
  std::string aps_sweep;
  actors::serving_slo slo;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// Agent scripts from the trace (trajectory JSONL or Mooncake), a preset, or the small default.
std::vector<actors::agent_script> build_scripts(const run_args& a, bool embedded_default, uint32_t vocab) {
  std::vector<actors::agent_script> scripts;
  std::mt19937_64 arrivals(a.seed * 7919 + 1);
  double clock = 0;
  auto next_arrival = [&]() {
    if (a.mode != "online") return 0.0;
    std::exponential_distribution<double> gap(a.aps);
    const double t = clock;
    clock += gap(arrivals);
    return t;
  };
  auto add = [&](const trajectory& t, uint32_t index) {
    actors::agent_script s;
    s.agent = index;
    s.turns = t.turns();
    if (a.max_turns && s.turns.size() > a.max_turns) s.turns.resize(a.max_turns);
    s.start_s = next_arrival();
    s.replay_tool_time = a.tool_time;
    s.seed = a.seed;
    scripts.push_back(std::move(s));
  };
  if (!a.trace_file.empty()) {
    if (detect_trace_format(a.trace_file) == trace_format::mooncake) {
      mooncake_reader reader(a.trace_file);
      mooncake_request r;
      uint64_t first_ts = 0;
      bool first = true;
      while (reader.next(r)) {
        if (first) first_ts = r.timestamp_ms, first = false;
        actors::agent_script s;
        s.agent = uint32_t(scripts.size());
        s.fixed_prompt = actors::mooncake_tokens(r, vocab);
        turn_shape shape;
        shape.prompt = s.fixed_prompt->size();
        shape.gen = uint32_t(std::max<uint64_t>(1, r.output_length));
        s.turns.push_back(shape);
        s.start_s = double(r.timestamp_ms - first_ts) / 1000.0;
        scripts.push_back(std::move(s));
        if (a.agents && scripts.size() >= a.agents) break;
      }
    } else {
      trajectory_reader reader(a.trace_file);
      trajectory t;
      while (reader.next(t)) {
        add(t, uint32_t(scripts.size()));
        if (a.agents && scripts.size() >= a.agents) break;
      }
    }
  } else {
    trace_preset preset = embedded_default || a.preset.empty() ? trace_preset{"demo", 768, 6, 56, 12, 0}
                                                                : find_trace_preset(a.preset);
    const uint32_t agents = a.agents ? a.agents : (embedded_default || a.preset.empty() ? 6 : 8);
    const auto trajectories = generate_trajectories(preset, agents, a.seed);
    for (size_t i = 0; i < trajectories.size(); ++i) add(trajectories[i], uint32_t(i));
  }
  if (scripts.empty()) throw user_error("the trace has no agents");
  return scripts;
}

// One cluster run of `policy` over `scripts`, with the options of the command line.
actors::run_summary run_policy(const run_args& a, const cluster_config& config, const std::string& policy,
                               std::vector<actors::agent_script> scripts, uint32_t verify_every,
                               const std::string& label) {
  const bool tty = isatty(fileno(stderr));
  actors::run_options o;
  o.config = config;
  o.config.store_dir = (fs::path(config.store_dir) / ("run-" + policy)).string();
  // Each run starts from a cold store of its own, so the comparison is fair and repeatable.
  if (!a.keep_store) {
    std::error_code ec;
    fs::remove_all(o.config.store_dir, ec);
  }
  o.policy = policy;
  o.scripts = std::move(scripts);
  o.verify_every = verify_every;
  for (auto& s : o.scripts) s.verify_every = verify_every;
  o.control_port = a.control_port;
  o.processes = a.processes || !a.node_registry.empty();
  if (a.node_registry.empty() && a.processes) o.node_program = fs::read_symlink("/proc/self/exe").string();
  o.node_registry = a.node_registry;
  const uint32_t node_count = config.total_nodes();
  o.on_registry = [label, node_count](const std::string& at) {
    fmt::print(stderr, "{}: node registry at {}: start `dualpath node --registry {} --node N` for N = 0..{}\n", label,
               at, at, node_count - 1);
  };
  if (o.control_port)
    o.on_control_port = [](uint16_t port) { fmt::print(stderr, "scheduler control port: 127.0.0.1:{}\n", port); };
  if (!a.quiet) {
    o.on_progress = [label, tty](const actors::run_progress& p) {
      const double frac = p.turns_total ? double(p.turns_done) / double(p.turns_total) : 0;
      const double eta = frac > 0 ? p.elapsed_s * (1 - frac) / frac : 0;
      if (tty) {
        const int width = 30, filled = int(frac * width);
        fmt::print(stderr, "\r{:<10} [{}{}] turns {}/{} agents {}/{} {:.0f}s eta {:.0f}s   ", label,
                   std::string(filled, '#'), std::string(width - filled, '.'), p.turns_done, p.turns_total,
                   p.agents_done, p.agents_total, p.elapsed_s, eta);
        if (p.agents_done == p.agents_total) fmt::print(stderr, "\n");
      } else if (p.agents_done == p.agents_total || std::fmod(p.elapsed_s, 5.0) < 1.0) {
        fmt::print(stderr, "{}: turns {}/{} agents {}/{} elapsed {:.0f}s eta {:.0f}s\n", label, p.turns_done,
                   p.turns_total, p.agents_done, p.agents_total, p.elapsed_s, eta);
      }
    };
  }
  return actors::run_cluster(o);
}

void write_report(const std::string& path, const nlohmann::json& json) {
  if (path.empty()) return;
  std::ofstream out(path);
  if (!out) throw user_error("cannot write report '" + path + "'");
  out << json.dump(2) << "\n";
}

void check_failures(const std::vector<actors::run_summary>& runs) {
  for (const auto& r : runs) {
    if (r.failed_turns > 0) throw user_error(fmt::format("policy {}: {} turns failed: {}", r.policy, r.failed_turns, r.first_error));
  }
}

std::vector<double> parse_aps_list(const std::string& text) {
  std::vector<double> out;
  for (const auto& item : split_list(text)) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (*end != '\0' || !(v > 0)) throw user_error("--aps-sweep: '" + item + "' is not a positive number of agents per second");
    out.push_back(v);
  }
  if (out.empty()) throw user_error("--aps-sweep: expected a comma-separated list of agents per second");
  return out;
}

void run_command(const run_args& a) {
  const bool embedded_default = a.cluster_file.empty();
  cluster_config config = embedded_default ? parse_cluster_config(default_cluster, "embedded default cluster")
                                           : load_cluster_config(a.cluster_file);
  const bool sweep = !a.aps_sweep.empty();
  if (a.mode != "offline" && a.mode != "online") throw user_error("--mode must be offline or online (got '" + a.mode + "')");
  if (a.mode == "online" && !sweep && !(a.aps > 0)) throw user_error("--mode online needs --aps > 0");
  if (!(a.slo.ttft_s > 0) || !(a.slo.tpot_s > 0)) throw user_error("--slo-ttft and --slo-tpot must be positive");

  std::vector<std::string> policies;
  if (!a.compare.empty()) policies = split_list(a.compare);
  else if (!a.policy.empty()) policies = {a.policy};
  else if (embedded_default) policies = {"basic", "dualpath", "oracle"};
  else policies = {config.policy};
  for (const auto& p : policies) run_mode_of(p);  // every name checked before the first run starts

  const uint32_t vocab = config.model == "tiny" || config.model == "small" ? find_model(config.model).vocab : 32000;
  const bool demo_trace = embedded_default && a.trace_file.empty() && a.preset.empty();
  // The embedded default shows that the tokens are right: every turn is recomputed from scratch afterwards.
  const uint32_t verify_every = a.verify_every_set ? a.verify_every : (embedded_default ? 1 : 0);

  if (sweep) {
    // Online capacity: every policy at every arrival rate, then the highest rate that meets the SLO.
    actors::aps_sweep results;
    std::vector<actors::run_summary> all;
    // Rates in increasing order; a policy is not run above the first rate it fails (its capacity is known).
    auto rates = parse_aps_list(a.aps_sweep);
    std::sort(rates.begin(), rates.end());
    std::set<std::string> over;
    for (const double aps : rates) {
      run_args at = a;
      at.mode = "online";
      at.aps = aps;
      const auto scripts = build_scripts(at, demo_trace, vocab);
      for (const auto& policy : policies) {
        if (over.count(policy)) continue;
        auto r = run_policy(a, config, policy, scripts, verify_every, fmt::format("{}@{}", policy, aps));
        if (!actors::meets_slo(r, a.slo)) over.insert(policy);
        results[policy].push_back({aps, r});
        all.push_back(std::move(r));
      }
    }
    if (!a.quiet) cli::print(actors::sweep_table(results, a.slo));
    write_report(a.report_file, actors::sweep_json(results, a.slo));
    check_failures(all);
    return;
  }

  const auto scripts = build_scripts(a, demo_trace, vocab);
  std::vector<actors::run_summary> runs;
  for (const auto& policy : policies) runs.push_back(run_policy(a, config, policy, scripts, verify_every, policy));
  if (!a.quiet) cli::print(actors::report_table(runs));
  write_report(a.report_file, actors::report_json(runs));
  check_failures(runs);
}

void setup(CLI::App& root) {
  auto a = std::make_shared<run_args>();
  auto* cmd = root.add_subcommand("run", "Run the embedded cluster on an agent trace and report JCT, TTFT, TPOT");
  cmd->add_option("--cluster", a->cluster_file, "Cluster file (TOML); default: the embedded 1P2D tiny cluster");
  cmd->add_option("--trace", a->trace_file, "Trajectory JSONL or Mooncake trace");
  cmd->add_option("--preset", a->preset, "Synthetic trace preset (32k, 48k, 64k) instead of --trace");
  cmd->add_option("--agents", a->agents, "Agents to replay (default: all in the trace; 6 for the demo trace)");
  cmd->add_option("--max-turns", a->max_turns, "Replay at most this many turns per agent");
  cmd->add_option("--mode", a->mode, "offline (all agents at t=0) or online (Poisson arrivals)");
  cmd->add_option("--aps", a->aps, "Online mode: agents arriving per second");
  cmd->add_option("--aps-sweep", a->aps_sweep,
                  "Online capacity: run every policy at each of these arrival rates (comma-separated APS) and "
                  "report the highest that meets the SLO (a policy stops at the first rate it fails)");
  cmd->add_option("--slo-ttft", a->slo.ttft_s, "SLO for --aps-sweep: TTFT in seconds (peak mean over 10 s windows)")
      ->capture_default_str();
  cmd->add_option("--slo-tpot", a->slo.tpot_s, "SLO for --aps-sweep: mean TPOT in seconds")->capture_default_str();
  cmd->add_option("--policy", a->policy, "basic | layerwise | dualpath_nosched | dualpath | round_robin | split | oracle");
  cmd->add_option("--compare", a->compare, "Comma-separated policies to run one after another");
  cmd->add_option_function<uint32_t>(
      "--verify-every", [a](uint32_t n) { a->verify_every = n, a->verify_every_set = true; },
      "Recompute every Nth turn from scratch on the cpu backend and compare tokens (default: 1 for the embedded "
      "default, else 0 = off)");
  cmd->add_option("--report", a->report_file, "Write the JSON report here");
  cmd->add_option("--seed", a->seed, "Seed of synthetic traces, tokens and arrivals");
  cmd->add_option_function<uint16_t>(
      "--control-port", [a](uint16_t port) { a->control_port = port; },
      "Publish the scheduler's control port for `dualpath ctl` on 127.0.0.1:PORT (0: any free port, printed)");
  cmd->add_flag("--processes", a->processes,
                "One process per node (`dualpath node`), started and wired by this launcher; not for oracle");
  cmd->add_option("--node-registry", a->node_registry,
                  "One process per node, started by hand (any host): publish the registry on HOST:PORT (0: any "
                  "free port, printed) and wait for the nodes to join");
  cmd->add_flag("--tool-time", a->tool_time, "Replay the trace's tool time between turns (default: zero)");
  cmd->add_flag("--keep-store", a->keep_store, "Do not clear the policy's store directory first");
  cmd->add_flag("--quiet", a->quiet, "Print nothing; use --report");
  cmd->callback([a] { run_command(*a); });
}

}  // namespace

DUALPATH_COMMAND(setup);
