#include "sim/step_run.hpp"

#include <cmath>

namespace dualpath::sim {

namespace {

// Σ_{j=lo}^{hi-1} (a + b·j).
double linear_sum(double a, double b, double lo, double hi) {
  return (hi - lo) * a + b * (hi * (hi - 1) - lo * (lo - 1)) / 2;
}

}  // namespace

step_run step_run::of(const model_spec& m, const roofline& r, const std::vector<uint64_t>& positions) {
  std::vector<prefill_chunk> now, next;
  now.reserve(positions.size());
  next.reserve(positions.size());
  for (uint64_t p : positions) {
    now.push_back({p, 1});
    next.push_back({p + 1, 1});
  }
  const auto w0 = prefill_layer_work(m, r.weight_bytes_per_param, now);
  const auto w1 = prefill_layer_work(m, r.weight_bytes_per_param, next);
  step_run s;
  s.layers = m.layers;
  s.launch_s = r.launch_s;
  s.flop_s0 = r.flop_seconds(w0.flops);
  s.flop_ds = r.flop_seconds(w1.flops) - s.flop_s0;
  s.byte_s0 = r.byte_seconds(w0.bytes());
  s.byte_ds = r.byte_seconds(w1.bytes()) - s.byte_s0;
  return s;
}

double step_run::seconds(uint64_t n) const {
  const double k = double(n);
  const double da = flop_s0 - byte_s0, db = flop_ds - byte_ds;  // compute minus memory roof at step j
  auto roof_sum = [&](double lo, double hi) {                   // one roof is on top over [lo, hi): test the middle
    if (hi <= lo) return 0.0;
    const bool compute = da + db * (lo + hi - 1) / 2 >= 0;
    return compute ? linear_sum(flop_s0, flop_ds, lo, hi) : linear_sum(byte_s0, byte_ds, lo, hi);
  };
  const double cross = db != 0 ? -da / db : -1;  // the roofs meet at j = cross
  double sum = 0;
  if (cross > 0 && cross < k) {
    const double m = std::floor(cross) + 1;  // the first step on the other side
    sum = roof_sum(0, m) + roof_sum(m, k);
  } else {
    sum = roof_sum(0, k);
  }
  return double(layers) * (sum + k * launch_s);
}

}  // namespace dualpath::sim
