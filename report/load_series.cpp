// docs/design.md §15: engine load and finished turns per window.
#include "report/load_series.hpp"

#include "report/run_report.hpp"

#include <algorithm>
#include <cmath>

namespace dualpath::report {

namespace {

// The window holding `t`, or `count` when outside [0, end].
size_t window_of(double t, double end_s, double window_s, size_t count) {
  if (!(t >= 0) || t > end_s) return count;
  return std::min(count - 1, size_t(t / window_s));
}

}  // namespace

load_over_time load_windows(const std::vector<engine_load_sample>& samples, const std::vector<turn_record>& turns,
                            double end_s, double window_s) {
  load_over_time out;
  out.window_s = window_s;
  if (!(end_s > 0) || !(window_s > 0)) return out;
  for (const auto& s : samples) out.engines = std::max(out.engines, s.engine + 1);
  out.prefill.assign(out.engines, true);
  for (const auto& s : samples) out.prefill[s.engine] = s.prefill;
  const size_t count = size_t(std::ceil(end_s / window_s - 1e-9));
  out.windows.resize(count);
  std::vector<std::vector<uint32_t>> samples_in(count, std::vector<uint32_t>(out.engines, 0));
  for (size_t k = 0; k < count; ++k) {
    out.windows[k].t_s = double(k) * window_s;
    out.windows[k].tok.assign(out.engines, 0);
    out.windows[k].seq.assign(out.engines, 0);
  }
  for (const auto& s : samples) {
    const size_t k = window_of(s.t_s, end_s, window_s, count);
    if (k == count) continue;
    out.windows[k].tok[s.engine] += double(s.tok);
    out.windows[k].seq[s.engine] += double(s.seq);
    ++samples_in[k][s.engine];
  }
  for (size_t k = 0; k < count; ++k)
    for (uint32_t e = 0; e < out.engines; ++e)
      if (samples_in[k][e] > 0) {
        out.windows[k].tok[e] /= samples_in[k][e];
        out.windows[k].seq[e] /= samples_in[k][e];
      }
  for (const auto& r : turns) {
    const size_t k = window_of(r.done_s, end_s, window_s, count);
    if (k == count) continue;
    out.turns.push_back({r.done_s, r.ttft_s, r.path});
    auto& w = out.windows[k];
    ++w.turns;
    switch (r.path) {
      case schedule::read_path::pe: ++w.path_pe; break;
      case schedule::read_path::de: ++w.path_de; break;
      case schedule::read_path::split: ++w.path_split; break;
    }
    w.ttft_mean_s += r.ttft_s;
    w.ttft_max_s = std::max(w.ttft_max_s, r.ttft_s);
  }
  for (auto& w : out.windows)
    if (w.turns > 0) w.ttft_mean_s /= w.turns;
  return out;
}

nlohmann::json to_json(const load_over_time& s) {
  nlohmann::json j;
  j["window_s"] = s.window_s;
  j["engines"] = nlohmann::json::array();
  for (uint32_t e = 0; e < s.engines; ++e) j["engines"].push_back(s.prefill[e] ? "prefill" : "decode");
  j["windows"] = nlohmann::json::array();
  for (const auto& w : s.windows)
    j["windows"].push_back({{"t_s", w.t_s},
                            {"tok", w.tok},
                            {"seq", w.seq},
                            {"turns", w.turns},
                            {"paths", {{"pe", w.path_pe}, {"de", w.path_de}, {"split", w.path_split}}},
                            {"ttft_mean_s", w.ttft_mean_s},
                            {"ttft_max_s", w.ttft_max_s}});
  // Finished turns as [done_s, ttft_s, path] triples: compact, a run has thousands.
  j["turns"] = nlohmann::json::array();
  for (const auto& t : s.turns)
    j["turns"].push_back({t.done_s, t.ttft_s,
                          t.path == schedule::read_path::pe   ? "pe"
                          : t.path == schedule::read_path::de ? "de"
                                                              : "split"});
  return j;
}

}  // namespace dualpath::report
