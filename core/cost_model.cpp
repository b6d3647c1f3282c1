#include "core/cost_model.hpp"

#include <algorithm>

namespace dualpath {

double attention_flops_per_token(const model_spec& m, uint64_t context) {
  const double L = double(context);
  switch (m.attention) {
    case attention_kind::gqa:
      // QK^T and PV, 2 FLOPs per multiply-add, over every query head.
      return m.layers * 4.0 * m.heads * m.head_dim * L;
    case attention_kind::mla: return m.layers * 2.0 * L * (m.head_dim + m.v_head_dim) * m.heads;
    case attention_kind::dsa: {
      const double attended = std::min<double>(L, m.dsa_top_k);
      const double sparse = 2.0 * attended * (m.head_dim + m.v_head_dim) * m.heads;
      const double indexer = 2.0 * m.indexer_heads * m.indexer_dim * L;
      return m.layers * (sparse + indexer);
    }
  }
  return 0;
}

double flops_per_token(const model_spec& m, uint64_t context) {
  return 2.0 * m.active_params + attention_flops_per_token(m, context);
}

double attention_sum_flops(const model_spec& m, uint64_t cached, uint64_t append) {
  if (append == 0) return 0;
  const double a = double(append), c = double(cached);
  // Σ_{i=1..a} (c + i): every position attends to the context before it and to itself.
  const double positions = a * c + a * (a + 1) / 2.0;
  if (m.attention != attention_kind::dsa) return attention_flops_per_token(m, 1) * positions;
  // DSA: the sparse part attends to min(position, top_k) tokens, the indexer to every position.
  const double k = double(m.dsa_top_k);
  double attended = 0;
  if (c >= k) {
    attended = a * k;
  } else if (c + a <= k) {
    attended = positions;
  } else {
    const double below = k - c;  // positions c+1 .. k are under the cap
    attended = below * c + below * (below + 1) / 2.0 + (a - below) * k;
  }
  const double sparse = 2.0 * (m.head_dim + m.v_head_dim) * m.heads * attended;
  const double indexer = 2.0 * m.indexer_heads * m.indexer_dim * positions;
  return m.layers * (sparse + indexer);
}

double prefill_flops(const model_spec& m, uint64_t cached, uint64_t append) {
  if (append == 0) return 0;
  return 2.0 * m.active_params * double(append) + attention_sum_flops(m, cached, append);
}

double cache_compute_ratio_gb_per_pflop(const model_spec& m, uint64_t context, uint64_t append) {
  const double bytes = double(context) * double(m.kv_bytes_per_token());
  const double flops = double(append) * flops_per_token(m, context);
  return (bytes / 1e9) / (flops / 1e15);
}

}  // namespace dualpath
