#pragma once
// Device helpers shared by the cuda backend's kernel files: bf16 loads and rounding, warp reductions, and the
// launch macros (the SIMT emulator of tests/gpu/ supplies its own macros and the CUDA vocabulary).
#include <cstdint>

#include "gpu/cuda/kernels.cuh"

#ifndef DUALPATH_SIMT_EMULATION
// Launches and dynamic shared memory go through these two macros so the emulator can stand in for both.
#define DP_LAUNCH(kernel, grid, block, shared, stream) kernel<<<grid, block, shared, stream>>>
#define DP_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#include <cuda_pipeline.h>  // asynchronous global -> shared copies (sm_80 and later)
#endif

namespace dualpath::gpu::cuda {

namespace {

constexpr int warp = 32;

__device__ __forceinline__ float bf16_load(uint16_t h) { return __uint_as_float(uint32_t(h) << 16); }

// Round to nearest even, the same rule as the host conversion (NaN kept as NaN).
__device__ __forceinline__ uint16_t bf16_round(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = warp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = warp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// 8 bf16 values in one 16-byte load.
struct alignas(16) bf16x8 {
  uint32_t w[4];
};
__device__ __forceinline__ float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

}  // namespace

}  // namespace dualpath::gpu::cuda
