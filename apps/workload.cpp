#include "apps/workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "apps/cli_checks.hpp"
#include "apps/command_registry.hpp"
#include "core/arrivals.hpp"
#include "core/modes.hpp"
#include "core/status.hpp"

namespace dualpath::cli {

void add_workload_options(CLI::App* cmd, workload_options& w) {
  cmd->add_option("--trace", w.trace_file, "Trajectory JSONL or Mooncake trace");
  cmd->add_option("--preset", w.preset, "Synthetic trace preset (32k, 48k, 64k) instead of --trace");
  cmd->add_option("--agents", w.agents, "Agents to replay (default: all in the trace; 6 for the demo trace)")
      ->check(positive());
  cmd->add_option("--max-turns", w.max_turns, "Replay at most this many turns per agent (default: all)")
      ->check(positive());
  cmd->add_option("--mode", w.mode, "offline (all agents at t=0) or online (Poisson arrivals)")
      ->transform(
          one_of(std::map<std::string, arrivals>{{"offline", arrivals::offline}, {"online", arrivals::online}}));
  cmd->add_option("--aps", w.aps, "Online mode: agents arriving per second")->check(positive());
  cmd->add_option("--aps-profile", w.aps_profile,
                  "Online mode: a rate that changes, FROM_S:APS,... (0:0.2,600:0.8,1200:0.2 rises and falls)");
  cmd->add_option("--time-scale", w.time_scale,
                  "Timestamped (Mooncake) traces: replay the recorded gaps times this (0.5 = twice as fast)")
      ->capture_default_str();
  cmd->add_option("--seed", w.seed, "Seed of synthetic traces, tokens and arrivals");
  cmd->add_flag("--tool-time", w.tool_time, "Replay the trace's tool time between turns (default: zero)");
}

void check_workload_options(const workload_options& w, bool sweep) {
  if (!w.aps_profile.empty()) {
    value_or_throw(parse_aps_profile(w.aps_profile));
    if (w.mode != arrivals::online) throw user_error("--aps-profile sets online arrival rates: add --mode online");
    if (w.aps > 0 || sweep) throw user_error("--aps-profile replaces --aps and --aps-sweep: give one of them");
  } else if (w.mode == arrivals::online && !sweep && !(w.aps > 0)) {
    throw user_error("--mode online needs --aps > 0 (or --aps-profile)");
  }
  if (w.mode == arrivals::offline && w.aps > 0)
    throw user_error("--aps sets the online arrival rate: add --mode online (offline agents all start at t = 0)");
  if (sweep && w.aps > 0) throw user_error("--aps and --aps-sweep: give one of them");
  if (!(w.time_scale > 0))
    throw user_error("--time-scale must be a positive factor (got " + fmt::format("{}", w.time_scale) + ")");
}

std::vector<workload_agent> build_workload(const workload_options& w, bool demo) {
  std::vector<workload_agent> out;
  const auto profile =
      w.aps_profile.empty() ? std::vector<rate_step>{{0, w.aps}} : value_or_throw(parse_aps_profile(w.aps_profile));
  arrival_clock clock(profile, w.seed * 7919 + 1);
  auto next_arrival = [&]() { return w.mode == arrivals::online ? clock.next() : 0.0; };
  auto add = [&](const trajectory& t) {
    workload_agent a;
    a.index = uint32_t(out.size());
    a.turns = t.turns();
    if (w.max_turns && a.turns.size() > w.max_turns) a.turns.resize(w.max_turns);
    a.start_s = next_arrival();
    out.push_back(std::move(a));
  };
  if (!w.trace_file.empty()) {
    if (detect_trace_format(w.trace_file) == trace_format::mooncake) {
      mooncake_reader reader(w.trace_file);
      mooncake_request r;
      uint64_t first_ts = 0;
      bool first = true;
      while (reader.next(r)) {
        if (first) first_ts = r.timestamp_ms, first = false;
        workload_agent a;
        a.index = uint32_t(out.size());
        turn_shape shape;
        shape.prompt = std::max<uint64_t>(1, r.input_length);
        shape.append = shape.prompt;
        shape.gen = uint32_t(std::max<uint64_t>(1, r.output_length));
        a.turns.push_back(shape);
        a.start_s = double(r.timestamp_ms - first_ts) / 1000.0 * w.time_scale;
        a.mooncake = std::move(r);
        out.push_back(std::move(a));
        if (w.agents && out.size() >= w.agents) break;
      }
    } else {
      trajectory_reader reader(w.trace_file);
      trajectory t;
      while (reader.next(t)) {
        add(t);
        if (w.agents && out.size() >= w.agents) break;
      }
    }
  } else {
    const trace_preset preset =
        demo || w.preset.empty() ? trace_preset{"demo", 768, 6, 56, 12, 0} : find_trace_preset(w.preset);
    const uint32_t agents = w.agents ? w.agents : (demo || w.preset.empty() ? 6 : 8);
    for (const auto& t : generate_trajectories(preset, agents, w.seed)) add(t);
  }
  if (out.empty()) throw user_error("the trace has no agents");
  return out;
}

void add_serving_options(CLI::App* cmd, serving_options& s) {
  std::string names;
  for (const auto& n : run_policy_names()) names += (names.empty() ? "" : " | ") + n;
  cmd->add_option("--policy", s.policy, "Run policy: " + names);
  cmd->add_option("--compare", s.compare, "Comma-separated policies to run one after another");
  add_report_options(cmd, s);
}

void add_report_options(CLI::App* cmd, serving_options& s) {
  cmd->add_option("--aps-sweep", s.aps_sweep,
                  "Online capacity: run every policy at each of these arrival rates (comma-separated APS) and "
                  "report the highest that meets the SLO (a policy stops at the first rate it fails)");
  cmd->add_option("--slo-ttft", s.slo.ttft_s, "SLO for --aps-sweep: TTFT in seconds (peak mean over 10 s windows)")
      ->capture_default_str();
  cmd->add_option("--slo-tpot", s.slo.tpot_s, "SLO for --aps-sweep: mean TPOT in seconds")->capture_default_str();
  cmd->add_option("--report", s.report_file, "Write the JSON report here");
  cmd->add_flag("--quiet", s.quiet, "Print nothing; use --report");
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<std::string> chosen_policies(const serving_options& s, const std::vector<std::string>& fallback) {
  std::vector<std::string> policies = !s.compare.empty()  ? split_list(s.compare)
                                      : !s.policy.empty() ? std::vector<std::string>{s.policy}
                                                          : fallback;
  for (const auto& p : policies) run_mode_of(p);
  if (policies.empty()) throw user_error("--compare: expected a comma-separated list of policies");
  return policies;
}

namespace {

std::vector<double> parse_aps_list(const std::string& text) {
  std::vector<double> out;
  for (const auto& item : split_list(text)) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (*end != '\0' || !(v > 0))
      throw user_error("--aps-sweep: '" + item + "' is not a positive number of agents per second");
    out.push_back(v);
  }
  if (out.empty()) throw user_error("--aps-sweep: expected a comma-separated list of agents per second");
  return out;
}

void write_report(const std::string& path, const nlohmann::json& json) {
  if (path.empty()) return;
  std::ofstream out(path);
  if (!out) throw user_error("cannot write report '" + path + "'");
  out << json.dump(2) << "\n";
}

void check_failures(const std::vector<report::run_summary>& runs) {
  for (const auto& r : runs)
    if (r.failed_turns > 0)
      throw user_error(fmt::format("policy {}: {} turns failed: {}", r.policy, r.failed_turns, r.first_error));
}

}  // namespace

void serve(const serving_options& s, const workload_options& w, const std::vector<std::string>& policies,
           const run_policy_fn& run) {
  if (!(s.slo.ttft_s > 0) || !(s.slo.tpot_s > 0)) throw user_error("--slo-ttft and --slo-tpot must be positive");
  if (!s.aps_sweep.empty()) {
    // Online capacity: rates in increasing order; a policy is not run above the first rate it fails.
    report::aps_sweep results;
    std::vector<report::run_summary> all;
    auto rates = parse_aps_list(s.aps_sweep);
    std::sort(rates.begin(), rates.end());
    std::set<std::string> over;
    for (const double aps : rates) {
      workload_options at = w;
      at.mode = arrivals::online;
      at.aps = aps;
      for (const auto& policy : policies) {
        if (over.count(policy)) continue;
        auto r = run(policy, at, fmt::format("{}@{}", policy, aps)).summary;
        if (!report::meets_slo(r, s.slo)) over.insert(policy);
        results[policy].push_back({aps, r});
        all.push_back(std::move(r));
      }
    }
    if (!s.quiet) print(report::sweep_table(results, s.slo));
    write_report(s.report_file, report::sweep_json(results, s.slo));
    check_failures(all);
    return;
  }
  std::vector<report::run_summary> runs;
  std::vector<nlohmann::json> extras;
  for (const auto& policy : policies) {
    auto r = run(policy, w, policy);
    runs.push_back(std::move(r.summary));
    extras.push_back(std::move(r.extra));
  }
  if (!s.quiet) print(report::report_table(runs));
  auto json = report::report_json(runs);
  for (size_t i = 0; i < extras.size() && i < json["runs"].size(); ++i) json["runs"][i].update(extras[i]);
  write_report(s.report_file, json);
  check_failures(runs);
}

}  // namespace dualpath::cli
