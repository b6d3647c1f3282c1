#include "schedule/batcher.hpp"

#include <algorithm>

#include "core/cost_model.hpp"
#include "core/status.hpp"

namespace dualpath::schedule {

double attention_prefill_flops(const model_spec& m, uint64_t cached, uint64_t bsz) {
  return attention_sum_flops(m, cached, bsz);
}

prefill_batcher::prefill_batcher(time_estimate estimate, double quota_s)
    : estimate_(std::move(estimate)), quota_s_(quota_s) {
  if (!estimate_) throw user_error("prefill batcher: no attention-time estimate given");
  if (!(quota_s_ > 0)) throw user_error("prefill batcher: compute quota must be positive seconds");
}

prefill_batcher::prefill_batcher(const model_spec& m, flops_fit fit, double quota_s)
    : prefill_batcher(
          [m, fit](uint64_t cached, uint64_t bsz) { return fit.seconds(attention_prefill_flops(m, cached, bsz)); },
          quota_s) {}

prefill_batcher::time_estimate quota_estimate(quota_scope_kind scope, const model_spec& m, flops_fit fit) {
  switch (scope) {
    case quota_scope_kind::layer: {
      const double layers = std::max<uint32_t>(1, m.layers);
      return [m, fit, layers](uint64_t cached, uint64_t bsz) {
        return fit.b * attention_prefill_flops(m, cached, bsz) / layers;
      };
    }
    case quota_scope_kind::attention:
      return [m, fit](uint64_t cached, uint64_t bsz) { return fit.seconds(attention_prefill_flops(m, cached, bsz)); };
    case quota_scope_kind::forward:
      return [m, fit](uint64_t cached, uint64_t bsz) { return fit.seconds(prefill_flops(m, cached, bsz)); };
  }
  throw user_error("prefill batcher: unknown quota scope");
}

std::vector<batch_entry> prefill_batcher::next_batch(std::deque<prefill_work>& queue, const hbm_budget* hbm) const {
  std::vector<batch_entry> batch;
  double used = 0;
  uint64_t hbm_used = 0;
  while (!queue.empty()) {
    prefill_work& w = queue.front();
    if (w.remaining == 0) {
      queue.pop_front();
      continue;
    }
    if (hbm && hbm->bytes) {
      const uint64_t need = hbm->bytes(w);
      if (!batch.empty() && hbm_used + need > hbm->free_bytes) break;  // FIFO: it waits for the next pass
      hbm_used += need;
    }
    const double whole = estimate_(w.cached, w.remaining);
    if (used + whole <= quota_s_) {
      batch.push_back({w.request, w.cached, w.remaining});
      used += whole;
      queue.pop_front();
      continue;
    }
    // Largest bsz' < remaining with used + estimate ≤ quota (the estimate grows with bsz).
    uint64_t lo = 0, hi = w.remaining - 1;
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo + 1) / 2;
      if (used + estimate_(w.cached, mid) <= quota_s_) lo = mid;
      else hi = mid - 1;
    }
    if (lo == 0 && batch.empty()) lo = 1;  // alone over the quota: still progress by one token
    if (lo > 0) {
      batch.push_back({w.request, w.cached, lo});
      w.cached += lo;
      w.remaining -= lo;
      if (w.remaining == 0) queue.pop_front();
    }
    break;  // FIFO: nothing after the chunked request joins this pass
  }
  return batch;
}

}  // namespace dualpath::schedule
