#pragma once
// SNIC balance over time (docs/design.md §15, `snic_over_time`), as the paper's Fig 13 plots it: per window of
// `window_s` (1 s), each node's SNIC read rate and mean read_q, and their max/avg across the nodes; the mean of
// those ratios over the run. Pure: samples in, windows out.
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace dualpath::report {

struct snic_series_sample {
  double t_s = 0;           // since the run's start (may be negative: sampled before the clients started)
  uint64_t read_bytes = 0;  // cumulative bytes read through the node's SNIC
  uint64_t read_q = 0;      // read_q at that moment
};

struct snic_window {
  double t_s = 0;                     // window start, since the run's start
  std::vector<double> read_gb_per_s;  // per node: bytes read in the window / its length
  std::vector<double> read_q_mb;      // per node: mean read_q of the samples in the window (1 MB = 1e6 B)
  double rate_max_over_avg = 0;       // 0 when no node read anything in the window
  double read_q_max_over_avg = 0;     // 0 when every read_q was empty
};

struct snic_over_time {
  double window_s = 1.0;
  std::vector<snic_window> windows;
  // Means of the per-window ratios over the windows where they are defined (some bytes read, resp. some
  // read_q): idle windows say nothing about balance. 0 when no window counts.
  double rate_max_over_avg_mean = 0, read_q_max_over_avg_mean = 0;
  uint32_t rate_windows = 0, read_q_windows = 0;  // windows in each mean
};

// Windows [k·w, (k+1)·w) for k = 0 .. ⌈end_s / w⌉ − 1, the last one cut at end_s. A node's bytes at time t are
// those of its last sample at or before t; its read_q in a window is the mean of its samples there (the last
// one before the window when it holds none). `per_node[n]` is node n's samples in time order.
snic_over_time snic_windows(const std::vector<std::vector<snic_series_sample>>& per_node, double end_s,
                            double window_s = 1.0);

nlohmann::json to_json(const snic_over_time& s);

}  // namespace dualpath::report
