#pragma once
// α and β of docs/design.md §7.2 from plain hardware numbers, and the FLOPs → time fit they (and the batcher)
// rest on. Numbers in, numbers out: measuring the hardware is someone else's job.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/cluster_config.hpp"
#include "core/kv_geometry.hpp"
#include "core/model_catalog.hpp"
#include "core/trace.hpp"
#include "schedule/policy.hpp"

namespace dualpath::schedule {

// seconds = a + b × FLOPs (a: fixed cost of a forward pass, b: inverse throughput).
struct flops_fit {
  double a = 0;
  double b = 0;
  double seconds(double flops) const { return a + b * flops; }
};

// Least-squares fit over (FLOPs, seconds) samples; throws user_error on fewer than two distinct FLOPs.
flops_fit fit_flops_to_time(const std::vector<std::pair<double, double>>& samples);

// Tokens one engine prefills per second for a typical turn (`cached` tokens of context, `append` new).
double prefill_tokens_per_s(const model_spec& m, const flops_fit& fit, uint64_t cached, uint64_t append);

// α = tokens a SNIC reads in `seconds` (3 s in the paper): snic bytes/s ÷ KV bytes per token × seconds.
uint64_t alpha_tokens(double snic_bytes_per_s, uint64_t kv_bytes_per_token, double seconds = 3.0);

// β = tokens one engine prefills in `seconds` (5 s in the paper).
uint64_t beta_tokens(double prefill_tokens_per_s, double seconds = 5.0);

// What α, β and Z are calibrated from (docs/design.md §7.1): the model and its FLOPs→time fit, the SNIC rate,
// the horizons, and the workload's mean turn; nonzero overrides from the cluster file win.
struct calibration_input {
  model_spec model;
  flops_fit fit;
  uint64_t kv_bytes_per_token = 1;
  uint32_t block_tokens = 64;
  double snic_bytes_per_s = 2e9;  // the SNIC cap, or uncapped the store's measured read rate; 2 GB/s unknown
  double alpha_s = 3.0, beta_s = 5.0;
  uint64_t alpha_tokens = 0, beta_tokens = 0;  // overrides (0: calibrate)
  double z_slack = 1.05;
  mean_turn turn;  // no turns: four cached blocks and one appended
};

struct calibration {
  policy_params params;
  uint64_t cached = 0, append = 0;  // the turn β was calibrated at
};

// The input of a run of cluster `c` on model `m` (KV laid out as `g`, compute fitted as `fit`) at its mean
// turn: the cluster file's overrides, and its SNIC cap as the rate (else the 2 GB/s default, which the
// runtime replaces by the store's measured read rate). The runtime and the simulator both start here.
calibration_input calibration_input_of(const cluster_config& c, const model_spec& m, const flops_fit& fit,
                                       const kv_geometry& g, const mean_turn& turn);

// The scheduler's thresholds, shared by the runtime and the simulator so both decide alike.
calibration calibrate(const calibration_input& in);

}  // namespace dualpath::schedule
