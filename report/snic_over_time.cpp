#include "report/snic_over_time.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace dualpath::report {

namespace {

// max / mean of `v`, 0 when the mean is 0.
double max_over_avg(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double sum = 0, max = 0;
  for (double x : v) {
    sum += x;
    max = std::max(max, x);
  }
  return sum > 0 ? max / (sum / double(v.size())) : 0;
}

// Bytes read by `t`: those of the last sample at or before t (0 before the first).
uint64_t bytes_at(const std::vector<snic_series_sample>& s, double t) {
  auto it = std::upper_bound(s.begin(), s.end(), t, [](double x, const snic_series_sample& v) { return x < v.t_s; });
  return it == s.begin() ? 0 : std::prev(it)->read_bytes;
}

// Mean read_q of the samples in [a, b); without one there, the last before a (0 before the first).
double mean_read_q(const std::vector<snic_series_sample>& s, double a, double b) {
  auto lo = std::lower_bound(s.begin(), s.end(), a, [](const snic_series_sample& v, double x) { return v.t_s < x; });
  double sum = 0;
  size_t n = 0;
  for (auto it = lo; it != s.end() && it->t_s < b; ++it, ++n) sum += double(it->read_q);
  if (n) return sum / double(n);
  return lo == s.begin() ? 0 : double(std::prev(lo)->read_q);
}

}  // namespace

snic_over_time snic_windows(const std::vector<std::vector<snic_series_sample>>& per_node, double end_s,
                            double window_s) {
  snic_over_time out;
  out.window_s = window_s;
  if (per_node.empty() || !(end_s > 0) || !(window_s > 0)) return out;
  const size_t count = size_t(std::ceil(end_s / window_s - 1e-9));
  double rate_sum = 0, q_sum = 0;
  for (size_t k = 0; k < count; ++k) {
    snic_window w;
    w.t_s = double(k) * window_s;
    const double end = std::min(end_s, w.t_s + window_s);
    for (const auto& n : per_node) {
      const uint64_t before = bytes_at(n, w.t_s), after = bytes_at(n, end);
      w.read_gb_per_s.push_back(double(after - std::min(after, before)) / (end - w.t_s) / 1e9);
      w.read_q_mb.push_back(mean_read_q(n, w.t_s, end) / 1e6);
    }
    w.rate_max_over_avg = max_over_avg(w.read_gb_per_s);
    w.read_q_max_over_avg = max_over_avg(w.read_q_mb);
    if (w.rate_max_over_avg > 0) {
      rate_sum += w.rate_max_over_avg;
      ++out.rate_windows;
    }
    if (w.read_q_max_over_avg > 0) {
      q_sum += w.read_q_max_over_avg;
      ++out.read_q_windows;
    }
    out.windows.push_back(std::move(w));
  }
  out.rate_max_over_avg_mean = out.rate_windows ? rate_sum / out.rate_windows : 0;
  out.read_q_max_over_avg_mean = out.read_q_windows ? q_sum / out.read_q_windows : 0;
  return out;
}

// The JSON of a run's SNIC balance, field by field under the structs' own names.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(snic_window, t_s, read_gb_per_s, read_q_mb, rate_max_over_avg, read_q_max_over_avg)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(snic_over_time, window_s, windows, rate_max_over_avg_mean, read_q_max_over_avg_mean,
                                   rate_windows, read_q_windows)

nlohmann::json to_json(const snic_over_time& s) { return nlohmann::json(s); }

}  // namespace dualpath::report
