#include "report/ep_round_series.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace dualpath::report {

ep_round_series make_ep_round_series(std::vector<ep_round_point> points) {
  ep_round_series s;
  s.enabled = true;
  std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.t_s < b.t_s; });
  double sum = 0;
  for (const auto& p : points) sum += p.max_over_avg;
  if (!points.empty()) s.max_over_avg_mean = sum / double(points.size());
  s.rounds = std::move(points);
  return s;
}

nlohmann::json to_json(const ep_round_series& s) {
  nlohmann::json series = nlohmann::json::array();
  for (const auto& p : s.rounds)
    series.push_back({{"t", p.t_s}, {"group", p.group}, {"members", p.members}, {"max_over_avg", p.max_over_avg}});
  return {{"rounds", s.rounds.size()}, {"max_over_avg_mean", s.max_over_avg_mean}, {"series", series}};
}

}  // namespace dualpath::report
