#include "core/cost_model.hpp"

#include <algorithm>

namespace dualpath {

double attention_flops_per_token(const model_spec& m, uint64_t context) {
  const double L = double(context);
  switch (m.attention) {
    case attention_kind::gqa:
      // QK^T and PV, 2 FLOPs per multiply-add, over every query head.
      return m.layers * 4.0 * m.heads * m.head_dim * L;
    case attention_kind::mla:
      return m.layers * 2.0 * L * (m.head_dim + m.v_head_dim) * m.heads;
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

double prefill_flops(const model_spec& m, uint64_t cached, uint64_t append) {
  // Attention grows linearly with position (or is capped for DSA), so sum it in closed form
  // for the linear part and fall back to a loop only where the cap bends the curve.
  if (append == 0) return 0;
  const double linear = 2.0 * m.active_params * double(append);
  if (m.attention != attention_kind::dsa) {
    const double first = double(cached), last = double(cached + append - 1);
    const double mean_ctx = (first + last) / 2.0 + 1.0;  // each token also attends to itself
    return linear + double(append) * attention_flops_per_token(m, 1) * mean_ctx;
  }
  double attn = 0;
  for (uint64_t i = 0; i < append; ++i) attn += attention_flops_per_token(m, cached + i + 1);
  return linear + attn;
}

double cache_compute_ratio_gb_per_pflop(const model_spec& m, uint64_t context, uint64_t append) {
  const double bytes = double(context) * double(m.kv_bytes_per_token());
  const double flops = double(append) * flops_per_token(m, context);
  return (bytes / 1e9) / (flops / 1e15);
}

}  // namespace dualpath
