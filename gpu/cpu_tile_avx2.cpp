// AVX2 products of the prefill attention's query tiles (cpu_tile.hpp), for CPUs with AVX2 and FMA but not
// AVX-512: the layouts and the order of every sum of cpu_tile_avx512.cpp, in eight-lane registers. With 16 of
// them, a score block is taken four rows × 16 keys at a time and a value block three rows × 32 dimensions.
#include <algorithm>

#include "gpu/cpu_simd.hpp"
#include "gpu/cpu_tile.hpp"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__)
#include <immintrin.h>
#define DUALPATH_AVX2 __attribute__((target("avx2,fma")))

namespace dualpath::gpu::cpu {

namespace {

// Keys per chunk of the value product: a chunk's value rows stay in L1 while every row group takes them.
constexpr uint64_t value_chunk = 64;
constexpr int score_rows = 4, score_keys = 16;  // 8 accumulators, two key vectors, a broadcast query element

// Rows [0, 4) × keys [j, j + 16) of a key group: each score an FMA chain over the dimensions in turn.
template <int HD>
DUALPATH_AVX2 void scores_block(const float* q, const float* kt, uint64_t j, float scale, float* s, uint64_t s_stride) {
  __m256 acc[score_rows][2];
  for (auto& row : acc) row[0] = row[1] = _mm256_setzero_ps();
  for (int d = 0; d < HD; ++d) {
    const __m256 k0 = _mm256_loadu_ps(kt + d * tile_keys + j), k1 = _mm256_loadu_ps(kt + d * tile_keys + j + 8);
    DUALPATH_UNROLL
    for (int r = 0; r < score_rows; ++r) {
      const __m256 qv = _mm256_broadcast_ss(q + r * HD + d);
      acc[r][0] = _mm256_fmadd_ps(qv, k0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(qv, k1, acc[r][1]);
    }
  }
  const __m256 sv = _mm256_set1_ps(scale);
  DUALPATH_UNROLL
  for (int r = 0; r < score_rows; ++r) {
    _mm256_storeu_ps(s + r * s_stride + j, _mm256_mul_ps(acc[r][0], sv));
    _mm256_storeu_ps(s + r * s_stride + j + 8, _mm256_mul_ps(acc[r][1], sv));
  }
}

template <int HD>
DUALPATH_AVX2 void scores(const float* q, uint64_t rows, const float* kt, uint64_t keys, float scale, float* s,
                          uint64_t s_stride) {
  // Keys outside, rows inside: a key group (HD × 32 floats) stays in L1 across the rows.
  for (uint64_t g = 0; g < keys; g += tile_keys)
    for (uint64_t r = 0; r < rows; r += score_rows)
      for (uint64_t j = 0; j < tile_keys; j += score_keys)
        scores_block<HD>(q + r * HD, kt + g * HD, j, scale, s + r * s_stride + g, s_stride);
}

// Rows [0, R) × dimensions [c0, c0 + 32) of output += Σ_j p[r][j] · v_j over keys [j0, j1), in key order. Three
// rows give 12 accumulators, as many FMA chains as cover the FMA's latency at two a cycle (two rows, 8 chains,
// made the tile's value product 0.08 s of a 0.67-s prefill pass); each value vector is loaded once for them.
template <int HD, int R>
DUALPATH_AVX2 void values_block(const float* p, uint64_t p_stride, uint64_t j0, uint64_t j1, const float* v,
                                uint64_t v_stride, uint32_t c0, float* o) {
  constexpr int C = 4;
  __m256 acc[R][C];
  DUALPATH_UNROLL
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_loadu_ps(o + r * HD + c0 + c * 8);
  for (uint64_t j = j0; j < j1; ++j) {
    __m256 pv[R];
    DUALPATH_UNROLL
    for (int r = 0; r < R; ++r) pv[r] = _mm256_broadcast_ss(p + r * p_stride + j);
    DUALPATH_UNROLL
    for (int c = 0; c < C; ++c) {
      const __m256 vc = _mm256_loadu_ps(v + j * v_stride + c0 + c * 8);
      DUALPATH_UNROLL
      for (int r = 0; r < R; ++r) acc[r][c] = _mm256_fmadd_ps(pv[r], vc, acc[r][c]);
    }
  }
  DUALPATH_UNROLL
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) _mm256_storeu_ps(o + r * HD + c0 + c * 8, acc[r][c]);
}

template <int HD>
DUALPATH_AVX2 void values(const float* p, uint64_t p_stride, uint64_t rows, uint64_t keys, const float* v,
                          uint64_t v_stride, float* o) {
  for (uint64_t j0 = 0; j0 < keys; j0 += value_chunk) {
    const uint64_t j1 = std::min(keys, j0 + value_chunk);
    uint64_t r = 0;
    for (; r + 3 <= rows; r += 3)
      for (uint32_t c0 = 0; c0 < HD; c0 += 32)
        values_block<HD, 3>(p + r * p_stride, p_stride, j0, j1, v, v_stride, c0, o + r * HD);
    for (; r < rows; ++r)
      for (uint32_t c0 = 0; c0 < HD; c0 += 32)
        values_block<HD, 1>(p + r * p_stride, p_stride, j0, j1, v, v_stride, c0, o + r * HD);
  }
}

}  // namespace

bool tile_scores_avx2(const float* q, uint64_t rows, uint32_t hd, const float* kt, uint64_t keys, float scale, float* s,
                      uint64_t s_stride) {
  return has_avx2_fma() && for_head_width(hd, [&](auto w) { scores<w.value>(q, rows, kt, keys, scale, s, s_stride); });
}

bool tile_values_avx2(const float* p, uint64_t p_stride, uint64_t rows, uint64_t keys, const float* v,
                      uint64_t v_stride, uint32_t hd, float* o) {
  return has_avx2_fma() &&
         for_head_width(hd, [&](auto w) { values<w.value>(p, p_stride, rows, keys, v, v_stride, o); });
}

}  // namespace dualpath::gpu::cpu

#else

namespace dualpath::gpu::cpu {

bool tile_scores_avx2(const float*, uint64_t, uint32_t, const float*, uint64_t, float, float*, uint64_t) {
  return false;
}
bool tile_values_avx2(const float*, uint64_t, uint64_t, uint64_t, const float*, uint64_t, uint32_t, float*) {
  return false;
}

}  // namespace dualpath::gpu::cpu

#endif
