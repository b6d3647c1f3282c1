#pragma once
// AVX-512 versions of the decode attention's two passes over bf16 KV rows (cpu_kernels.hpp has the contract
// and the portable versions). They take head widths of 32, 64 and 128 and a CPU with AVX-512F, and return
// false otherwise, leaving the work to the portable versions.
//
// Why a second version: the portable one widens each row into a buffer, then sums each (head, query) dot
// product across eight lanes on its own, and keeps its output rows in memory; that is about 560 vector
// instructions a token for a small model and made decode attention compute-bound at twice its memory time.
// Here each head's slice is widened in registers, the dot products of eight tokens are summed across lanes
// together, and a token block's output rows stay in registers (docs/design.md §10, cpu backend).
#include <cstddef>
#include <cstdint>

#include "gpu/cpu_kernels.hpp"

namespace dualpath::gpu::cpu {

// The kernels' ask_split, where they take heads of width hd on this CPU.
bool bf16_ask_split_avx512(uint32_t hd, ask_split& split);

bool bf16_scores_avx512(const float* qg, uint32_t kv_heads, uint64_t rq, uint32_t hd, const std::byte* base,
                        uint32_t tokens, uint64_t stride, uint64_t off, float scale, float* s, uint64_t ctx,
                        uint64_t j0, rows_ahead ahead);

bool bf16_weighted_values_avx512(const float* s, uint32_t kv_heads, uint64_t rq, uint64_t ctx, uint64_t j0,
                                 const std::byte* base, uint32_t tokens, uint64_t stride, uint64_t off, uint32_t hd,
                                 float* og, rows_ahead ahead);

}  // namespace dualpath::gpu::cpu
