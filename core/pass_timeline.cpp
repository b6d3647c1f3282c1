#include "core/pass_timeline.hpp"

#include <algorithm>
#include <numeric>

namespace dualpath::pass_timeline {

const char* phase_name(phase p) {
  switch (p) {
    case phase::admit: return "admit";
    case phase::wait_kv: return "wait_kv";
    case phase::compute: return "compute";
    case phase::drain: return "drain";
    case phase::finish: return "finish";
  }
  return "?";
}

double pass_record::total_ms() const { return std::accumulate(ms.begin(), ms.end(), 0.0); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2) return v[mid];
  const double upper = v[mid];
  return (upper + *std::max_element(v.begin(), v.begin() + mid)) / 2;
}

void fetch_log::add(bool own_node, uint32_t layer, double ms) {
  (own_node ? own_ : other_).push_back(ms);
  if (layer == 0) first_ = std::max(first_, ms);
}

fetch_round_trips fetch_log::round_trips() const {
  auto of = [](const std::vector<double>& v) { return v.empty() ? -1.0 : median(v); };
  return {of(own_), of(other_), first_};
}

namespace {

// The median of one round-trip figure over the passes that have it.
double median_present(const std::vector<pass_record>& passes, double fetch_round_trips::*field) {
  std::vector<double> v;
  for (const auto& p : passes)
    if (p.fetches.*field >= 0) v.push_back(p.fetches.*field);
  return median(std::move(v));
}

}  // namespace

summary summarize(const std::vector<pass_record>& passes) {
  summary s;
  s.passes = passes.size();
  if (passes.empty()) return s;
  std::vector<double> column(passes.size());
  double all = 0;
  for (size_t p = 0; p < phase_count; ++p) {
    double sum = 0;
    for (size_t i = 0; i < passes.size(); ++i) sum += column[i] = passes[i].ms[p];
    s.median_ms[p] = median(column);
    s.share[p] = sum;
    all += sum;
  }
  for (auto& x : s.share) x = all > 0 ? x / all : 0;
  for (size_t i = 0; i < passes.size(); ++i) column[i] = passes[i].total_ms();
  s.total_median_ms = median(column);
  for (size_t i = 0; i < passes.size(); ++i) column[i] = passes[i].worker_ms;
  s.worker_median_ms = median(column);
  s.fetch_median_ms = {median_present(passes, &fetch_round_trips::own_ms),
                       median_present(passes, &fetch_round_trips::other_ms),
                       median_present(passes, &fetch_round_trips::first_ms)};
  return s;
}

}  // namespace dualpath::pass_timeline
