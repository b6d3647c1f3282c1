#pragma once
// α and β of docs/design.md §7.2 from plain hardware numbers, and the FLOPs → time fit they (and the batcher)
// rest on. Numbers in, numbers out: measuring the hardware is someone else's job.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/model_catalog.hpp"

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

}  // namespace dualpath::schedule
