// `dualpath plan`: which P/D split of a node budget to deploy (docs/design.md §5, §17). Every split that the
// bandwidth bounds admit is simulated with the workload, and the best by offline JCT (or, with --aps-sweep,
// by online capacity under the SLO) is recommended.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "apps/command_registry.hpp"
#include "apps/sim_runs.hpp"
#include "core/bounds.hpp"
#include "core/status.hpp"

namespace {

using namespace dualpath;

struct plan_args {
  std::string cluster_file;
  cli::cluster_overrides overrides;
  cli::workload_options workload;
  cli::serving_options serving;
  cli::sim_flags flags;
  uint32_t nodes = 0;
  double dram_gb_per_s = 500;
  bool json = false;
};

struct layout_row {
  uint32_t p = 0, d = 0;
  bool bounds_checked = false, feasible = true;
  std::string why;  // binding or violated bounds
  double jct_s = 0, ttft_p50 = 0, tpot_p50 = 0, capacity_aps = 0;
  bool simulated = false;
  bool adaptive = false;  // starts at P/D and moves nodes between roles (docs/design.md §7.9)
  std::vector<sim::role_switch> moves;
  std::string label() const { return fmt::format("{}P{}D{}", p, d, adaptive ? "+" : ""); }
};

// Adaptive P/D is recommended over the best static split only when it is this much better: a planner that
// moves nodes for 1% is not worth the moving.
constexpr double adaptive_margin = 0.02;

// The bounds of docs/design.md §5 for P/D on this hardware; an uncapped link cannot be checked.
void check_bounds(layout_row& row, const cluster_config& c, double dram) {
  if (!(c.cnic_gb_per_s > 0) || !(c.snic_gb_per_s > 0)) return;
  bounds_input in;
  in.gpus_per_node = c.engines_per_node;
  in.cnic_gb_per_s = c.cnic_gb_per_s;
  in.snic_ratio = c.snic_gb_per_s / c.cnic_gb_per_s;
  in.dram_gb_per_s = dram;
  in.prefill_nodes = row.p;
  in.decode_nodes = row.d;
  const auto rep = evaluate_bounds(in);
  if (!rep.feasible_hardware) throw user_error("plan: infeasible hardware: " + rep.infeasibility());
  row.bounds_checked = true;
  row.feasible = *rep.feasible;
  if (!row.feasible)
    row.why =
        fmt::format("P/D {} outside {} .. {}", as_fraction(*rep.pd), as_fraction(rep.pd_min), as_fraction(rep.pd_max));
}

void plan_command(const plan_args& a) {
  if (a.nodes < 2) throw user_error("plan: --nodes must be at least 2 (one prefill and one decode node)");
  const bool online = !a.serving.aps_sweep.empty();
  cli::check_workload_options(a.workload, online);
  const std::string policy = a.serving.policy.empty() ? "dualpath" : a.serving.policy;
  run_mode_of(policy);
  std::vector<double> rates;
  for (const auto& item : cli::split_list(a.serving.aps_sweep)) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (*end != '\0' || !(v > 0))
      throw user_error("--aps-sweep: '" + item + "' is not a positive number of agents per second");
    rates.push_back(v);
  }
  std::sort(rates.begin(), rates.end());

  auto simulate_row = [&](layout_row& row, const cluster_config& c) {
    if (online) {
      // The columns and the role switches are the run at the row's capacity (the lowest rate if none meets
      // the SLO): what the split does at the load it is recommended for.
      std::vector<report::sweep_point> points;
      size_t at = 0;
      for (double aps : rates) {
        cli::workload_options w = a.workload;
        w.mode = cli::arrivals::online;
        w.aps = aps;
        auto r = cli::simulate(c, a.flags, policy, w, fmt::format("{}@{}", row.label(), aps), a.serving.quiet);
        const bool ok = report::meets_slo(r.summary, a.serving.slo);
        if (ok || points.empty()) {
          row.moves = r.role_switches;
          at = points.size();
        }
        points.push_back({aps, std::move(r.summary)});
        if (!ok) break;
      }
      row.capacity_aps = report::capacity_aps(points, a.serving.slo);
      row.jct_s = points[at].run.jct_s;
      row.ttft_p50 = points[at].run.ttft.p50;
      row.tpot_p50 = points[at].run.tpot.p50;
    } else {
      const auto r = cli::simulate(c, a.flags, policy, a.workload, row.label(), a.serving.quiet);
      row.jct_s = r.summary.jct_s;
      row.ttft_p50 = r.summary.ttft.p50;
      row.tpot_p50 = r.summary.tpot.p50;
      row.moves = r.role_switches;
    }
    row.simulated = true;
  };
  auto config_of = [&](uint32_t p, bool adaptive) {
    cli::cluster_overrides o = a.overrides;
    o.prefill_nodes = p;
    o.decode_nodes = a.nodes - p;
    o.adaptive = adaptive;
    return cli::sim_cluster(a.cluster_file, o);
  };

  std::vector<layout_row> rows;
  rows.reserve(2 * a.nodes);  // every split and its adaptive row: `ranked` and `best` point into it
  for (uint32_t p = 1; p < a.nodes; ++p) {
    const cluster_config c = config_of(p, false);
    layout_row row;
    row.p = p;
    row.d = a.nodes - p;
    check_bounds(row, c, a.dram_gb_per_s);
    if (row.feasible) simulate_row(row, c);
    rows.push_back(row);
  }
  std::vector<const layout_row*> ranked;
  for (const auto& r : rows)
    if (r.simulated) ranked.push_back(&r);
  if (ranked.empty())
    throw user_error(
        fmt::format("plan: no P/D split of {} nodes is inside the bandwidth bounds ({})", a.nodes, rows.front().why));
  // Higher capacity online, shorter JCT offline: the static ranking and the pick among the adaptive rows.
  auto better = [&](const layout_row& x, const layout_row& y) {
    return online ? x.capacity_aps > y.capacity_aps : x.jct_s < y.jct_s;
  };
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](const layout_row* x, const layout_row* y) { return better(*x, *y); });
  const layout_row* best = ranked.front();
  // Adaptive P/D from every split simulated above: where it should start is not always the best static split
  // (a workload that explores first and edits later is best served from the explorers' split, which moves
  // toward decode as editors accumulate; docs/experiments.md, "Adaptive P/D"). The best of them is
  // recommended only when it beats the best static split by the margin.
  if (a.overrides.adaptive) {
    const size_t statics = rows.size();
    const layout_row* best_adaptive = nullptr;
    for (size_t i = 0; i < statics; ++i) {
      if (!rows[i].simulated) continue;
      layout_row row;
      row.p = rows[i].p;
      row.d = rows[i].d;
      row.adaptive = true;
      row.bounds_checked = rows[i].bounds_checked;
      simulate_row(row, config_of(row.p, true));
      rows.push_back(row);
      const layout_row& r = rows.back();
      if (!best_adaptive || better(r, *best_adaptive)) best_adaptive = &r;
    }
    const bool wins = online ? best_adaptive->capacity_aps > (1 + adaptive_margin) * best->capacity_aps
                             : best_adaptive->jct_s < (1 - adaptive_margin) * best->jct_s;
    if (wins) best = best_adaptive;
  }

  if (a.json) {
    auto list = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json j{{"prefill_nodes", r.p},
                       {"decode_nodes", r.d},
                       {"adaptive", r.adaptive},
                       {"feasible", r.feasible},
                       {"bounds_checked", r.bounds_checked},
                       {"simulated", r.simulated}};
      if (!r.why.empty()) j["why"] = r.why;
      if (r.simulated) {
        j["jct_s"] = r.jct_s;
        j["ttft_p50_s"] = r.ttft_p50;
        j["tpot_p50_s"] = r.tpot_p50;
        if (online) j["capacity_aps"] = r.capacity_aps;
      }
      if (r.adaptive) {
        auto moves = nlohmann::json::array();
        for (const auto& m : r.moves)
          moves.push_back({{"node", m.node}, {"to", m.to_prefill ? "prefill" : "decode"}, {"at_s", m.decided_s}});
        j["role_switches"] = moves;
      }
      list.push_back(j);
    }
    nlohmann::json out{
        {"nodes", a.nodes},
        {"policy", policy},
        {"by", online ? "capacity_aps" : "jct_s"},
        {"layouts", list},
        {"recommended", {{"prefill_nodes", best->p}, {"decode_nodes", best->d}, {"adaptive", best->adaptive}}}};
    cli::print(out.dump(2) + "\n");
    return;
  }
  std::string text = fmt::format("{:<8} {:>6} {:<10} {:>10} {:>9} {:>9}{}\n", "layout", "P/D", "bounds", "jct_s",
                                 "ttft_p50", "tpot_p50", online ? "  capacity_aps" : "");
  for (const auto& r : rows) {
    const std::string bounds = !r.bounds_checked ? "unchecked" : r.feasible ? "ok" : "outside";
    if (!r.simulated) {
      text += fmt::format("{:<8} {:>6} {:<10} {}\n", fmt::format("{}P{}D", r.p, r.d), as_fraction(double(r.p) / r.d),
                          bounds, r.why);
      continue;
    }
    text += fmt::format(
        "{:<8} {:>6} {:<10} {:>10.1f} {:>9.3f} {:>9.4f}{}{}\n", r.label(), as_fraction(double(r.p) / r.d), bounds,
        r.jct_s, r.ttft_p50, r.tpot_p50, online ? fmt::format("  {:>12.3f}", r.capacity_aps) : "",
        r.adaptive ? fmt::format("  ({} role switch{})", r.moves.size(), r.moves.size() == 1 ? "" : "es") : "");
  }
  if (a.overrides.adaptive) text += "+: adaptive P/D starting from that split (docs/design.md §7.9)\n";
  text += fmt::format("recommended: {}{} ({} {})\n", best->adaptive ? "adaptive from " : "",
                      fmt::format("{}P{}D", best->p, best->d), online ? "highest capacity" : "shortest JCT",
                      online ? fmt::format("{:.3f} APS", best->capacity_aps) : fmt::format("{:.1f} s", best->jct_s));
  cli::print(text);
}

void setup(CLI::App& root) {
  auto a = std::make_shared<plan_args>();
  auto* cmd = root.add_subcommand(
      "plan", "Simulate every feasible P/D split of a node budget and recommend one (offline JCT or online capacity)");
  cmd->add_option("--nodes", a->nodes, "Node budget P + D")->required();
  cmd->add_option("--cluster", a->cluster_file, "Cluster file (TOML); default: the paper's DS 660B cluster");
  cmd->add_option("--dram-gbps", a->dram_gb_per_s, "M: DRAM bandwidth per node for the bounds, GB/s")
      ->capture_default_str();
  cli::add_cluster_overrides(cmd, a->overrides);
  cli::add_workload_options(cmd, a->workload);
  cmd->add_option("--policy", a->serving.policy, "Run policy to plan for (default dualpath)");
  cmd->add_option("--aps-sweep", a->serving.aps_sweep, "Plan by online capacity over these arrival rates (APS)");
  cmd->add_option("--slo-ttft", a->serving.slo.ttft_s, "SLO: TTFT in seconds (peak 10 s mean)")->capture_default_str();
  cmd->add_option("--slo-tpot", a->serving.slo.tpot_s, "SLO: mean TPOT in seconds")->capture_default_str();
  cmd->add_flag("--quiet", a->serving.quiet, "No progress lines");
  cmd->add_flag("--json", a->json, "Print JSON");
  cli::add_sim_flags(cmd, a->flags);
  cmd->callback([a] { plan_command(*a); });
}

}  // namespace

DUALPATH_COMMAND(setup);
