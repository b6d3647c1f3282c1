#pragma once
// AVX2 versions of the decode attention's two passes over bf16 KV rows, for CPUs without AVX-512
// (cpu_kernels.hpp has the contract, cpu_bf16_avx512.hpp the wider twin and why the portable versions are not
// enough). They take head widths of 32, 64 and 128 and a CPU with AVX2 and FMA, and return false otherwise.
//
// With eight lanes a 64-wide head's key slice fills eight registers, so it is widened once per token and
// each query row's dot product is taken from those registers; the value pass keeps two output rows of 32
// columns in registers per sweep of a token block, which stays in L1/L2 between the sweeps.
#include <cstddef>
#include <cstdint>

#include "gpu/cpu_kernels.hpp"

namespace dualpath::gpu::cpu {

// The kernels' ask_split, where they take heads of width hd on this CPU.
bool bf16_ask_split_avx2(uint32_t hd, ask_split& split);

bool bf16_scores_avx2(const float* qg, uint32_t kv_heads, uint64_t rq, uint32_t hd, const std::byte* base,
                      uint32_t tokens, uint64_t stride, uint64_t off, float scale, float* s, uint64_t ctx, uint64_t j0,
                      rows_ahead ahead);

bool bf16_weighted_values_avx2(const float* s, uint32_t kv_heads, uint64_t rq, uint64_t ctx, uint64_t j0,
                               const std::byte* base, uint32_t tokens, uint64_t stride, uint64_t off, uint32_t hd,
                               float* og, rows_ahead ahead);

}  // namespace dualpath::gpu::cpu
