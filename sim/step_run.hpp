#pragma once
// A run of decode steps over an unchanging batch in closed form (docs/design.md §17). Step j feeds every
// item one token at position p_i + j; on the roofline (core/roofline.hpp) one layer of it costs
// max(compute roof, memory roof) + launch, and both roofs grow linearly in j as long as no DSA item crosses
// top_k, so n steps cost a sum of at most two arithmetic series.
#include <cstdint>
#include <vector>

#include "core/model_catalog.hpp"
#include "core/roofline.hpp"

namespace dualpath::sim {

struct step_run {
  uint32_t layers = 0;
  double launch_s = 0;
  double flop_s0 = 0, flop_ds = 0;  // one layer's compute roof at step 0, and its growth per step
  double byte_s0 = 0, byte_ds = 0;  // the same for the memory roof

  // The batch whose items hold `positions` tokens of KV; a step later each holds one more.
  static step_run of(const model_spec& m, const roofline& r, const std::vector<uint64_t>& positions);
  // Seconds of the first n steps.
  double seconds(uint64_t n) const;
};

}  // namespace dualpath::sim
