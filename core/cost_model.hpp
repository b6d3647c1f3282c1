#pragma once
// Workload arithmetic of docs/design.md §6: FLOPs per new token and the cache-compute ratio.
#include <cstdint>

#include "core/model_catalog.hpp"

namespace dualpath {

// Forward FLOPs of one new token that attends to `context` earlier tokens.
double flops_per_token(const model_spec& m, uint64_t context);

// Attention-only FLOPs of one new token at `context` (what the intra-engine batcher balances).
double attention_flops_per_token(const model_spec& m, uint64_t context);

// Attention FLOPs of `append` new tokens on top of `cached`: Σ_{i=1..append} attention(cached + i), in closed
// form (DSA's top-k cap bends the sum once, at top_k), so a pass of any size costs O(1) to estimate.
double attention_sum_flops(const model_spec& m, uint64_t cached, uint64_t append);

// FLOPs to prefill `append` new tokens on top of `cached` tokens, exactly (sums the causal growth).
double prefill_flops(const model_spec& m, uint64_t cached, uint64_t append);

// Cache-compute ratio ρ = L_ctx · b_kv / (L_app · f(L_ctx)) in GB per PFLOP.
double cache_compute_ratio_gb_per_pflop(const model_spec& m, uint64_t context, uint64_t append);

}  // namespace dualpath
