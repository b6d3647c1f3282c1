#pragma once
// Intra-engine batching on a PE with a compute quota (docs/design.md §7.6). All GPUs of an expert-parallel
// group wait for each other every layer, so each forward pass takes FIFO work only while the estimated
// attention time stays under the quota; the request that would overflow it runs as a chunk, the largest
// that fits (binary search), and continues next pass.
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "core/model_catalog.hpp"
#include "schedule/calibration.hpp"

namespace dualpath::schedule {

// A request waiting on a PE: `cached` tokens already have KV, `remaining` still need computing.
struct prefill_work {
  uint64_t request = 0;
  uint64_t cached = 0;
  uint64_t remaining = 0;
};

// One request's share of a forward pass: compute `bsz` tokens on top of `cached`.
struct batch_entry {
  uint64_t request = 0;
  uint64_t cached = 0;
  uint64_t bsz = 0;
};

class prefill_batcher {
 public:
  // Estimated attention seconds of computing `bsz` tokens on top of `cached`.
  using time_estimate = std::function<double(uint64_t cached, uint64_t bsz)>;

  prefill_batcher(time_estimate estimate, double quota_s = 0.3);
  // Attention FLOPs of the model (core/cost_model.hpp) through the FLOPs → time fit.
  prefill_batcher(const model_spec& m, flops_fit fit, double quota_s = 0.3);

  // The next forward pass from the head of `queue`. Finished requests are popped; a chunked request
  // stays at the head with its `cached`/`remaining` advanced. A request whose first token alone exceeds
  // the quota runs one token when the pass is otherwise empty, so nothing starves.
  std::vector<batch_entry> next_batch(std::deque<prefill_work>& queue) const;

  double estimate(uint64_t cached, uint64_t bsz) const { return estimate_(cached, bsz); }
  double quota_s() const { return quota_s_; }

 private:
  time_estimate estimate_;
  double quota_s_;
};

// Attention FLOPs of computing `bsz` tokens on top of `cached` (exact causal sum).
double attention_prefill_flops(const model_spec& m, uint64_t cached, uint64_t bsz);

}  // namespace dualpath::schedule
