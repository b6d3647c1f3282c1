#pragma once
// What the cpu backend's vector kernels share whatever their width (cpu_gemm.cpp, cpu_bf16_avx*.cpp,
// cpu_tile_avx*.cpp; the modeled KV's words too): which instruction sets this CPU has, the head widths the
// attention kernels are built for, and how their loops over registers are written (docs/design.md §10).
#include <cstdint>
#include <type_traits>

// Put before each loop over an array of vector registers (accumulators, a row's vectors): such a loop is
// unrolled whole. Without it GCC 12 kept those arrays in memory as well as in registers and stored every one
// of them to the stack on each pass of the loop around (12 stores a key in the AVX2 tile's value product, which
// ran at two thirds of sgemm's speed; with it, as fast as sgemm: docs/experiments.md).
#define DUALPATH_UNROLL _Pragma("GCC unroll 16")

namespace dualpath::gpu::cpu {

inline bool has_avx512f() { return __builtin_cpu_supports("avx512f"); }
inline bool has_avx2() { return __builtin_cpu_supports("avx2"); }
inline bool has_avx2_fma() { return has_avx2() && __builtin_cpu_supports("fma"); }

// Calls f(std::integral_constant<int, hd>) for the head widths the attention kernels are built for (32, 64,
// 128); false, calling nothing, for any other.
template <class F>
bool for_head_width(uint32_t hd, F&& f) {
  switch (hd) {
    case 32: f(std::integral_constant<int, 32>{}); return true;
    case 64: f(std::integral_constant<int, 64>{}); return true;
    case 128: f(std::integral_constant<int, 128>{}); return true;
    default: return false;
  }
}

}  // namespace dualpath::gpu::cpu
