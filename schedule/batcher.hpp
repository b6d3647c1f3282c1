#pragma once
// Intra-engine batching on a PE with a compute quota (docs/design.md §7.6). All GPUs of an expert-parallel
// group wait for each other every layer, so each forward pass takes FIFO work only while the estimated
// attention time of one layer stays under the quota; the request that would overflow it runs as a chunk, the
// largest that fits (binary search), and continues next pass. A pass also stops taking requests before their
// HBM exceeds what the engine has free, so a request that fits alone never fails because of its batch-mates.
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <vector>

#include "core/cluster_config.hpp"
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

// The quota of the run modes that batch as the unmodified framework does (docs/design.md §7.7): none.
inline constexpr double no_quota_s = std::numeric_limits<double>::infinity();

// The HBM a pass may still take: `free_bytes` now, and what each request adds to a pass (its new KV unless
// already allocated by an earlier chunk, plus its hit KV's staging). A request's HBM does not depend on its
// chunk size.
struct hbm_budget {
  uint64_t free_bytes = 0;
  std::function<uint64_t(const prefill_work&)> bytes;
};

class prefill_batcher {
 public:
  // Estimated attention seconds of computing `bsz` tokens on top of `cached`.
  using time_estimate = std::function<double(uint64_t cached, uint64_t bsz)>;

  prefill_batcher(time_estimate estimate, double quota_s = 0.3);  // quota_s may be no_quota_s
  // Attention FLOPs of the model (core/cost_model.hpp) through the FLOPs → time fit.
  prefill_batcher(const model_spec& m, flops_fit fit, double quota_s = 0.3);

  // The next forward pass from the head of `queue`. Finished requests are popped; a chunked request
  // stays at the head with its `cached`/`remaining` advanced. A request whose first token alone exceeds
  // the quota runs one token when the pass is otherwise empty, so nothing starves. With `hbm`, a request
  // after the head joins only if the HBM of the batch, itself included, stays within hbm->free_bytes; the
  // first that does not ends the pass (FIFO). The head always joins: whether it fits alone is the engine's call.
  std::vector<batch_entry> next_batch(std::deque<prefill_work>& queue, const hbm_budget* hbm = nullptr) const;

  double estimate(uint64_t cached, uint64_t bsz) const { return estimate_(cached, bsz); }
  double quota_s() const { return quota_s_; }

 private:
  time_estimate estimate_;
  double quota_s_;
};

// Attention FLOPs of computing `bsz` tokens on top of `cached` (exact causal sum).
double attention_prefill_flops(const model_spec& m, uint64_t cached, uint64_t bsz);

// What the quota counts under each scope, through the FLOPs → time fit (docs/design.md §7.6):
//   layer      attention FLOPs of one layer × the fit's slope b (a layer pays no pass's fixed cost a);
//   attention  a + b × attention FLOPs of all layers;
//   forward    a + b × FLOPs of the whole forward pass.
prefill_batcher::time_estimate quota_estimate(quota_scope_kind scope, const model_spec& m, flops_fit fit);

}  // namespace dualpath::schedule
