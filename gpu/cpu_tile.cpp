#include "gpu/cpu_tile.hpp"

#include "gpu/cpu_simd.hpp"

namespace dualpath::gpu::cpu {

bool tile_kernels_usable(uint32_t hd) {
  return (has_avx512f() || has_avx2_fma()) && for_head_width(hd, [](auto) {});
}

void tile_scores(const float* q, uint64_t rows, uint32_t hd, const float* kt, uint64_t keys, float scale, float* s,
                 uint64_t s_stride) {
  if (!tile_scores_avx512(q, rows, hd, kt, keys, scale, s, s_stride))
    tile_scores_avx2(q, rows, hd, kt, keys, scale, s, s_stride);
}

void tile_values(const float* p, uint64_t p_stride, uint64_t rows, uint64_t keys, const float* v, uint64_t v_stride,
                 uint32_t hd, float* o) {
  if (!tile_values_avx512(p, p_stride, rows, keys, v, v_stride, hd, o))
    tile_values_avx2(p, p_stride, rows, keys, v, v_stride, hd, o);
}

}  // namespace dualpath::gpu::cpu
