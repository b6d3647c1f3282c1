#include "report/run_report.hpp"

#include <cmath>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

namespace dualpath::report {

distribution summarize(std::vector<double> v) {
  distribution d;
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, size_t(std::llround(q * double(v.size() - 1))))]; };
  d.mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  d.p50 = at(0.5);
  d.p90 = at(0.9);
  d.p99 = at(0.99);
  return d;
}

double peak_window_mean_ttft(const std::vector<turn_record>& records, double window_s, size_t min_turns) {
  std::vector<std::pair<double, double>> done;  // (done_s, ttft_s) of the turns that finished
  for (const auto& r : records)
    if (r.error.empty()) done.emplace_back(r.done_s, r.ttft_s);
  std::sort(done.begin(), done.end());
  double peak = 0, sum = 0;
  size_t first = 0;
  for (size_t last = 0; last < done.size(); ++last) {
    sum += done[last].second;
    while (done[last].first - done[first].first > window_s) sum -= done[first++].second;
    if (last - first + 1 >= min_turns) peak = std::max(peak, sum / double(last - first + 1));
  }
  return peak;
}

void summarize_turns(run_summary& s, const std::vector<turn_record>& records) {
  s.ttft_peak_window_s = peak_window_mean_ttft(records);
  std::vector<double> ttft, ttst, gap, tpot, e2e, queue, assign, kv_read, prefill, handoff, hbm_load, write_back;
  std::map<uint32_t, std::pair<double, double>> agents;  // agent -> (first submission, last answer)
  uint64_t prompt_tokens = 0, hit_tokens = 0;
  for (const auto& r : records) {
    s.jct_s = std::max(s.jct_s, r.done_s);  // the job ends with its last turn
    if (!r.error.empty()) {
      ++s.failed_turns;
      if (s.first_error.empty()) s.first_error = r.error;
      continue;
    }
    ++s.turns;
    auto [span, fresh] = agents.try_emplace(r.agent, r.start_s, r.done_s);
    if (!fresh) span->second = {std::min(span->second.first, r.start_s), std::max(span->second.second, r.done_s)};
    ttft.push_back(r.ttft_s);
    e2e.push_back(r.done_s - r.start_s);
    if (r.has_ttst) {
      ttst.push_back(r.ttst_s);
      gap.push_back(r.second_token_gap_s);
    }
    prompt_tokens += r.prompt_tokens;
    hit_tokens += r.hit_tokens;
    if (r.has_tpot) tpot.push_back(r.tpot_s);
    queue.push_back(r.queue_s);
    assign.push_back(r.assign_s);
    kv_read.push_back(r.kv_read_s);
    prefill.push_back(r.prefill_s);
    handoff.push_back(r.handoff_s);
    hbm_load.push_back(r.hbm_load_s);
    write_back.push_back(r.write_back_s);
    switch (r.path) {
      case schedule::read_path::pe: ++s.path_pe; break;
      case schedule::read_path::de: ++s.path_de; break;
      case schedule::read_path::split: ++s.path_split; break;
    }
    s.kv_verified_blocks += r.kv_verified;
    s.kv_corrupt_blocks += r.kv_corrupt;
    s.corrupt_blocks_recomputed += r.corrupt_blocks;
    s.hit_blocks += r.hit_blocks;
  }
  s.ttft = summarize(ttft);
  s.ttst = summarize(ttst);
  s.second_token_gap = summarize(gap);
  s.prompt_tps = s.jct_s > 0 ? double(prompt_tokens) / s.jct_s : 0;
  s.hit_rate = prompt_tokens > 0 ? double(hit_tokens) / double(prompt_tokens) : 0;
  double agent_sum = 0;
  for (const auto& [agent, span] : agents) agent_sum += span.second - span.first;
  s.agent_jct_mean_s = agents.empty() ? 0 : agent_sum / double(agents.size());
  s.tpot = summarize(tpot);
  s.e2e = summarize(e2e);
  s.queue = summarize(queue);
  s.assign = summarize(assign);
  s.kv_read = summarize(kv_read);
  s.prefill = summarize(prefill);
  s.handoff = summarize(handoff);
  s.hbm_load = summarize(hbm_load);
  s.write_back = summarize(write_back);
  if (!s.snic_bytes.empty()) {
    const double total = double(std::accumulate(s.snic_bytes.begin(), s.snic_bytes.end(), uint64_t(0)));
    const double max = double(*std::max_element(s.snic_bytes.begin(), s.snic_bytes.end()));
    s.snic_max_over_avg = total > 0 ? max / (total / double(s.snic_bytes.size())) : 0;
  }
}

namespace {
nlohmann::json dist(const distribution& d) {
  return {{"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90}, {"p99", d.p99}};
}
}  // namespace

nlohmann::json role_switches_json(const std::vector<schedule::role_switch>& moves) {
  auto out = nlohmann::json::array();
  for (const auto& m : moves)
    out.push_back({{"node", m.node},
                   {"to", m.to_prefill ? "prefill" : "decode"},
                   {"decided_s", m.decided_s},
                   {"drained_s", m.drained_s},
                   {"done_s", m.done_s},
                   {"why", m.why}});
  return out;
}

nlohmann::json to_json(const run_summary& s) {
  nlohmann::json j;
  j["policy"] = s.policy;
  j["jct_s"] = s.jct_s;
  j["turns"] = s.turns;
  j["failed_turns"] = s.failed_turns;
  j["ttft_s"] = dist(s.ttft);
  j["ttft_peak_10s_mean_s"] = s.ttft_peak_window_s;
  j["ttst_s"] = dist(s.ttst);
  j["second_token_gap_s"] = dist(s.second_token_gap);
  j["tpot_s"] = dist(s.tpot);
  j["e2e_s"] = dist(s.e2e);
  if (s.inter_token.p99 > 0) j["inter_token_s"] = dist(s.inter_token);
  j["prompt_tps"] = s.prompt_tps;
  j["agent_jct_mean_s"] = s.agent_jct_mean_s;
  j["ttft_breakdown_s"] = {
      {"queue", dist(s.queue)}, {"assign", dist(s.assign)}, {"kv_read", dist(s.kv_read)}, {"prefill", dist(s.prefill)}};
  j["handoff_breakdown_s"] = {
      {"handoff", dist(s.handoff)}, {"hbm_load", dist(s.hbm_load)}, {"write_back", dist(s.write_back)}};
  j["prefill_nodes"] = s.prefill_nodes;
  j["snic_bytes"] = s.snic_bytes;
  j["snic_max_over_avg"] = s.snic_max_over_avg;
  j["store_read_bytes"] = s.store_read_bytes;
  j["snic_write_bytes"] = s.snic_write_bytes;
  j["snic_over_time"] = to_json(s.snic_time);
  if (!s.load_time.windows.empty()) j["load_over_time"] = to_json(s.load_time);
  if (s.ep.enabled) j["ep_rounds"] = to_json(s.ep);
  if (s.passes.passes > 0) {
    nlohmann::json phases, shares;
    for (size_t p = 0; p < pass_timeline::phase_count; ++p) {
      const char* name = pass_timeline::phase_name(pass_timeline::phase(p));
      phases[name] = s.passes.median_ms[p];
      shares[name] = s.passes.share[p];
    }
    j["pass_timeline_ms"] = {{"passes", s.passes.passes},
                             {"median", phases},
                             {"total_median", s.passes.total_median_ms},
                             {"worker_median", s.passes.worker_median_ms},
                             {"share", shares},
                             {"fetch_round_trip",
                              {{"own_node", s.passes.fetch_median_ms.own_ms},
                               {"other_nodes", s.passes.fetch_median_ms.other_ms},
                               {"layer_0", s.passes.fetch_median_ms.first_ms}}}};
  }
  j["working_set"] = {{"lambda_agents_per_s", s.ws_lambda_per_s},
                      {"mean_agent_jct_s", s.ws_t_bar_s},
                      {"final_context_tokens", s.ws_len_tokens},
                      {"tokens", s.ws_tokens},
                      {"bytes", s.ws_bytes}};
  j["path_requests"] = {{"pe", s.path_pe}, {"de", s.path_de}, {"split", s.path_split}};
  j["jct_lower_bound_s"] = s.jct_lower_bound_s;
  j["jct_over_bound"] = s.jct_over_bound;
  j["verified_turns"] = s.verified_turns;
  j["mismatched_turns"] = s.mismatched_turns;
  j["kv_verified_blocks"] = s.kv_verified_blocks;
  j["kv_corrupt_blocks"] = s.kv_corrupt_blocks;
  j["corrupt_blocks_recomputed"] = s.corrupt_blocks_recomputed;
  j["persisted_blocks"] = s.persisted_blocks;
  j["hit_blocks"] = s.hit_blocks;
  j["hit_rate"] = s.hit_rate;
  j["lost_nodes"] = s.lost_nodes;
  j["rejoined_nodes"] = s.rejoined_nodes;
  j["migrated_turns"] = s.migrated_turns;
  j["retried_turns"] = s.retried_turns;
  j["unpersisted_blocks"] = s.unpersisted_blocks;
  j["refused_peers"] = {{"registry", s.refused_joins}, {"control", s.refused_commands}};
  if (s.adaptive) {
    j["role_switches"] = role_switches_json(s.role_switches);
    j["final_prefill_nodes"] = s.final_prefill_nodes;
  }
  if (!s.first_error.empty()) j["first_error"] = s.first_error;
  return j;
}

nlohmann::json report_json(const std::vector<run_summary>& runs) {
  nlohmann::json j;
  j["runs"] = nlohmann::json::array();
  for (const auto& r : runs) j["runs"].push_back(to_json(r));
  auto jct = [&](const std::string& p) -> double {
    for (const auto& r : runs)
      if (r.policy == p) return r.jct_s;
    return 0;
  };
  nlohmann::json speedup = nlohmann::json::object();
  const std::pair<const char*, const char*> pairs[] = {{"dualpath", "basic"},
                                                       {"dualpath", "layerwise"},
                                                       {"oracle", "dualpath"},
                                                       {"split", "dualpath"},
                                                       {"dualpath", "round_robin"},
                                                       {"layerwise", "basic"},
                                                       {"dualpath_nosched", "layerwise"},
                                                       {"dualpath", "dualpath_nosched"}};
  for (auto [x, y] : pairs) {
    const double jx = jct(x), jy = jct(y);
    if (jx > 0 && jy > 0) speedup[std::string(x) + "_vs_" + y] = jy / jx;
  }
  j["speedup"] = speedup;
  return j;
}

std::string report_table(const std::vector<run_summary>& runs) {
  size_t width = 12;  // the policy column grows with the longest name, so the columns stay aligned
  for (const auto& r : runs) width = std::max(width, r.policy.size());
  std::string out = fmt::format("{:<{}} {:>8} {:>6} {:>8} {:>9} {:>9} {:>9} {:>10} {:>9} {:>10} {:>17} {:>9}\n",
                                "policy", width, "jct_s", "turns", "hit_rate", "ttft_p50", "ttft_p99", "tpot_p50",
                                "kv_read_s", "snic_m/a", "snic_1s_m/a", "paths pe/de/split", "verified");
  for (const auto& r : runs) {
    const std::string paths = fmt::format("{}/{}/{}", r.path_pe, r.path_de, r.path_split);
    out += fmt::format(
        "{:<{}} {:>8.2f} {:>6} {:>8.3f} {:>9.3f} {:>9.3f} {:>9.4f} {:>10.3f} {:>9.2f} {:>10.2f} {:>17} {:>5}/{:<3}\n",
        r.policy, width, r.jct_s, r.turns, r.hit_rate, r.ttft.p50, r.ttft.p99, r.tpot.p50, r.kv_read.mean,
        r.snic_max_over_avg, r.snic_time.rate_max_over_avg_mean, paths, r.verified_turns - r.mismatched_turns,
        r.verified_turns);
  }
  for (const auto& r : runs)
    if (r.lost_nodes > 0)
      out += fmt::format("{}: {} nodes lost, {} turns re-run on the survivors{}\n", r.policy, r.lost_nodes,
                         r.migrated_turns,
                         r.rejoined_nodes ? fmt::format(", {} nodes rejoined", r.rejoined_nodes) : std::string());
  for (const auto& r : runs)
    if (r.adaptive) {
      out += fmt::format("{}: {} role switches, {} prefill nodes at the end\n", r.policy, r.role_switches.size(),
                         r.final_prefill_nodes);
      for (const auto& m : r.role_switches)
        out += fmt::format("  node {} to {}: decided {:.2f} s, drained {:.2f} s, serving {:.2f} s ({})\n", m.node,
                           m.to_prefill ? "prefill" : "decode", m.decided_s, m.drained_s, m.done_s, m.why);
    }
  for (const auto& r : runs)
    if (r.retried_turns > 0 || r.unpersisted_blocks > 0)
      out += fmt::format("{}: {} turns retried after a KV transfer fault, {} blocks not persisted\n", r.policy,
                         r.retried_turns, r.unpersisted_blocks);
  const auto j = report_json(runs);
  for (auto& [k, v] : j["speedup"].items()) out += fmt::format("{} = {:.2f}\n", k, v.get<double>());
  return out;
}

turn_record make_turn_record(const turn_facts& f, const turn_stamps& t) {
  const auto span = [](const std::optional<double>& a, const std::optional<double>& b) {
    return a && b ? *b - *a : 0.0;
  };
  turn_record r;
  static_cast<turn_facts&>(r) = f;
  r.hit_tokens = std::min(f.hit_blocks * f.block_tokens, f.prompt_tokens);
  r.start_s = t.submitted.value_or(0);
  r.done_s = t.done.value_or(0);
  r.ttft_s = span(t.submitted, t.first_token);
  r.has_ttst = t.second_token.has_value();
  r.ttst_s = span(t.submitted, t.second_token);
  r.second_token_gap_s = span(t.first_token, t.second_token);
  if (t.second_token && f.generated_tokens > 2) {
    r.has_tpot = true;
    r.tpot_s = span(t.second_token, t.last_token) / double(f.generated_tokens - 2);
  }
  r.queue_s = span(t.submitted, t.assigned);
  r.kv_read_s = span(t.assigned, t.kv_ready);
  r.assign_s = span(t.kv_ready, t.prefill_start);
  r.prefill_s = span(t.prefill_start, t.first_token);
  r.handoff_s = span(t.first_token, t.handoff);
  r.hbm_load_s = span(t.handoff, t.in_hbm);
  r.write_back_s = span(t.last_token, t.done);
  return r;
}

bool meets_slo(const run_summary& r, const serving_slo& slo) {
  return r.turns > 0 && r.failed_turns == 0 && r.ttft_peak_window_s <= slo.ttft_s && r.tpot.mean <= slo.tpot_s;
}

double capacity_aps(std::vector<sweep_point> points, const serving_slo& slo) {
  std::sort(points.begin(), points.end(), [](const sweep_point& a, const sweep_point& b) { return a.aps < b.aps; });
  double capacity = 0;
  for (const auto& p : points) {
    if (!meets_slo(p.run, slo)) break;
    capacity = p.aps;
  }
  return capacity;
}

nlohmann::json sweep_json(const aps_sweep& sweep, const serving_slo& slo) {
  nlohmann::json j;
  j["slo"] = {{"ttft_peak_10s_mean_s", slo.ttft_s}, {"tpot_mean_s", slo.tpot_s}};
  j["policies"] = nlohmann::json::object();
  for (const auto& [policy, points] : sweep) {
    nlohmann::json pj;
    pj["capacity_aps"] = capacity_aps(points, slo);
    pj["points"] = nlohmann::json::array();
    for (const auto& p : points)
      pj["points"].push_back({{"aps", p.aps}, {"meets_slo", meets_slo(p.run, slo)}, {"run", to_json(p.run)}});
    j["policies"][policy] = pj;
  }
  nlohmann::json ratio = nlohmann::json::object();
  const std::pair<const char*, const char*> pairs[] = {{"dualpath", "basic"}, {"oracle", "dualpath"}};
  for (auto [x, y] : pairs) {
    if (!sweep.count(x) || !sweep.count(y)) continue;
    const double cx = capacity_aps(sweep.at(x), slo), cy = capacity_aps(sweep.at(y), slo);
    if (cx > 0 && cy > 0) ratio[std::string(x) + "_vs_" + y] = cx / cy;
  }
  j["capacity_ratio"] = ratio;
  return j;
}

std::string sweep_table(const aps_sweep& sweep, const serving_slo& slo) {
  std::string out = fmt::format("{:<12} {:>6} {:>10} {:>10} {:>9} {:>10} {:>8} {:>6} {:>4}\n", "policy", "aps",
                                "ttft_peak", "ttft_mean", "ttft_p99", "tpot_mean", "jct_s", "turns", "slo");
  for (const auto& [policy, points] : sweep)
    for (const auto& p : points)
      out += fmt::format("{:<12} {:>6.2f} {:>10.3f} {:>10.3f} {:>9.3f} {:>10.4f} {:>8.2f} {:>6} {:>4}\n", policy, p.aps,
                         p.run.ttft_peak_window_s, p.run.ttft.mean, p.run.ttft.p99, p.run.tpot.mean, p.run.jct_s,
                         p.run.turns, meets_slo(p.run, slo) ? "yes" : "no");
  out += fmt::format("SLO: TTFT (peak 10 s mean) <= {} s, mean TPOT <= {} ms\n", slo.ttft_s, slo.tpot_s * 1000);
  for (const auto& [policy, points] : sweep)
    out += fmt::format("capacity {} = {:.2f} APS\n", policy, capacity_aps(points, slo));
  const auto j = sweep_json(sweep, slo);  // named: items() must not outlive the object it walks
  for (auto& [k, v] : j["capacity_ratio"].items()) out += fmt::format("capacity {} = {:.2f}\n", k, v.get<double>());
  return out;
}

void set_jct_bound(run_summary& s, const std::vector<turn_record>& records, const bound_inputs& in) {
  uint64_t total_bytes = 0;
  for (auto b : s.snic_bytes) total_bytes += b;
  const double bytes_bound =
      in.snic_gb_per_s > 0 && in.nodes > 0 ? double(total_bytes) / (in.snic_gb_per_s * 1e9 * in.nodes) : 0;
  double compute_s = 0;
  for (const auto& r : records) {
    if (!r.error.empty() || r.prompt_tokens == 0 || !in.prefill_seconds) continue;
    const uint64_t cached = uint64_t(r.hit_blocks) * in.block_tokens;
    compute_s += in.prefill_seconds(cached, r.prompt_tokens - cached);
  }
  const double compute_bound = in.prefill_engines > 0 ? compute_s / double(in.prefill_engines) : 0;
  s.jct_lower_bound_s = std::max(bytes_bound, compute_bound);
  s.jct_over_bound = s.jct_lower_bound_s > 0 ? s.jct_s / s.jct_lower_bound_s : 0;
}

}  // namespace dualpath::report
