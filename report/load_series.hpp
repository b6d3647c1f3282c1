#pragma once
// The run over time (docs/design.md §15, `load_over_time`): per window of `window_s`, each engine's load as
// the scheduler saw it (tok_e and seq_e, means of the samples in the window), and the turns that finished
// there: how many, by read path, and their TTFT. With `snic_over_time` it is what a person watches a run
// by, written into the report JSON. Pure: samples and turn records in, windows out.
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedule/policy.hpp"

namespace dualpath::report {

struct turn_record;  // report/run_report.hpp, which holds a load_over_time in its run_summary

// One engine's load at one moment, as the scheduler reported it.
struct engine_load_sample {
  double t_s = 0;  // since the run's start
  uint32_t engine = 0;
  bool prefill = true;  // the engine's role
  uint64_t tok = 0;     // tok_e
  uint32_t seq = 0;     // seq_e
};

struct load_window {
  double t_s = 0;                // window start
  std::vector<double> tok, seq;  // per engine (index = engine id): mean of its samples, 0 when none
  uint32_t turns = 0;            // turns that finished in the window (failed ones too)
  uint32_t path_pe = 0, path_de = 0, path_split = 0;  // ... by read path
  double ttft_mean_s = 0, ttft_max_s = 0;             // ... their TTFT (0 when none)
};

// A finished turn: when, its TTFT, its read path (the points of a TTFT-over-time plot).
struct turn_point {
  double done_s = 0, ttft_s = 0;
  schedule::read_path path = schedule::read_path::pe;
};

struct load_over_time {
  double window_s = 1.0;
  std::vector<turn_point> turns;  // every turn in [0, end_s], in the order given
  uint32_t engines = 0;
  std::vector<bool> prefill;  // per engine: its role (engines never sampled count as prefill)
  std::vector<load_window> windows;
};

// Windows [k·w, (k+1)·w) for k = 0 .. ⌈end_s / w⌉ − 1; samples and turns outside [0, end_s] are left out,
// a turn finishing exactly at end_s counts in the last window.
load_over_time load_windows(const std::vector<engine_load_sample>& samples, const std::vector<turn_record>& turns,
                            double end_s, double window_s = 1.0);

nlohmann::json to_json(const load_over_time& s);

}  // namespace dualpath::report
