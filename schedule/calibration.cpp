#include "schedule/calibration.hpp"

#include <algorithm>
#include <cmath>

#include "core/cost_model.hpp"
#include "core/status.hpp"

namespace dualpath::schedule {

flops_fit fit_flops_to_time(const std::vector<std::pair<double, double>>& samples) {
  const double n = double(samples.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : samples) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double den = n * sxx - sx * sx;
  if (samples.size() < 2 || !(std::fabs(den) > 1e-12 * std::max(1.0, sxx * n)))
    throw user_error("FLOPs→time fit: need at least two samples with different FLOPs, got " +
                     std::to_string(samples.size()));
  flops_fit f;
  f.b = (n * sxy - sx * sy) / den;
  f.a = (sy - f.b * sx) / n;
  return f;
}

double prefill_tokens_per_s(const model_spec& m, const flops_fit& fit, uint64_t cached, uint64_t append) {
  const double t = fit.seconds(prefill_flops(m, cached, append));
  if (!(t > 0)) throw user_error("FLOPs→time fit gives a non-positive time for model " + m.name);
  return double(append) / t;
}

uint64_t alpha_tokens(double snic_bytes_per_s, uint64_t kv_bytes_per_token, double seconds) {
  if (kv_bytes_per_token == 0) throw user_error("alpha: KV bytes per token must be positive");
  return uint64_t(snic_bytes_per_s * seconds / double(kv_bytes_per_token));
}

uint64_t beta_tokens(double prefill_tokens_per_s, double seconds) { return uint64_t(prefill_tokens_per_s * seconds); }

calibration_input calibration_input_of(const cluster_config& c, const model_spec& m, const flops_fit& fit,
                                       const kv_geometry& g, const mean_turn& turn) {
  calibration_input in;
  in.model = m;
  in.fit = fit;
  in.kv_bytes_per_token = g.layers * g.bytes_per_token_layer;
  in.block_tokens = g.block_tokens;
  if (c.snic_gb_per_s > 0) in.snic_bytes_per_s = c.snic_gb_per_s * 1e9;
  in.alpha_s = c.alpha_s;
  in.beta_s = c.beta_s;
  in.alpha_tokens = c.alpha_tokens;
  in.beta_tokens = c.beta_tokens;
  in.z_slack = c.z_slack;
  in.turn = turn;
  return in;
}

calibration calibrate(const calibration_input& in) {
  calibration c;
  c.params.kv_bytes_per_token = in.kv_bytes_per_token;
  c.params.alpha_tokens = alpha_tokens(in.snic_bytes_per_s, in.kv_bytes_per_token, in.alpha_s);
  c.cached = in.turn.turns ? uint64_t(in.turn.hit) : 4ull * in.block_tokens;
  c.append = in.turn.turns ? std::max<uint64_t>(1, uint64_t(in.turn.append)) : in.block_tokens;
  c.params.beta_tokens = beta_tokens(prefill_tokens_per_s(in.model, in.fit, c.cached, c.append), in.beta_s);
  if (in.alpha_tokens) c.params.alpha_tokens = in.alpha_tokens;
  if (in.beta_tokens) c.params.beta_tokens = in.beta_tokens;
  c.params.z_slack = in.z_slack;
  return c;
}

}  // namespace dualpath::schedule
