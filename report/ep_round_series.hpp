#pragma once
// EP lockstep rounds as a time series (docs/design.md §15, the paper's Fig 14): per round of a PE group,
// the largest member's attention time over the group's mean, on the run's clock.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <vector>

namespace dualpath::report {

struct ep_round_point {
  double t_s = 0;           // the round's start, seconds after the run's start
  uint32_t group = 0;       // the PE group (today: its prefill node)
  uint32_t members = 0;     // engines with a pass in the round
  double max_over_avg = 0;  // max / mean attention time over the group's engines (idle ones count 0)
};

struct ep_round_series {
  bool enabled = false;                // the run had `ep_sync`
  std::vector<ep_round_point> rounds;  // ordered by t_s
  double max_over_avg_mean = 0;        // over the rounds (0 when there were none)
};

// Sorts `points` by time and takes the mean ratio.
ep_round_series make_ep_round_series(std::vector<ep_round_point> points);
// {"rounds": n, "max_over_avg_mean": x, "series": [{"t", "group", "members", "max_over_avg"}, ...]}
nlohmann::json to_json(const ep_round_series& s);

}  // namespace dualpath::report
