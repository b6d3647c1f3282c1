// AVX-512 products of the prefill attention's query tiles (cpu_tile.hpp), in place of two sgemm calls per key
// block. At a head width of 64 both of those are thin: sgemm copies (packs) the whole score block and the key
// or value block on every call, about as many floats as the 64-deep product then reads, and that packing was a
// tenth of a prefill pass. Here nothing is copied per call: keys are kept transposed per KV head (the gather
// writes them so, once per request and layer), so a key block's scores are a vector load of 16 keys times a
// broadcast query element; and values are read in their rows, a vector of 16 of a value's dimensions times a
// broadcast probability. docs/design.md §10.
#include <algorithm>

#include "gpu/cpu_simd.hpp"
#include "gpu/cpu_tile.hpp"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__)
#include <immintrin.h>
#define DUALPATH_AVX512 __attribute__((target("avx512f,avx2,fma")))

namespace dualpath::gpu::cpu {

namespace {

// Keys per chunk of the value product: a chunk's value rows (64 × 128 floats at most) stay in L1 while every
// row group of the tile takes them.
constexpr uint64_t value_chunk = 64;

// Eight rows × 32 keys of scores: 16 accumulators, two key vectors and a broadcast query element.
template <int HD>
DUALPATH_AVX512 void scores_block(const float* q, const float* kt, float scale, float* s, uint64_t s_stride) {
  __m512 acc[tile_rows][2];
  for (auto& row : acc) row[0] = row[1] = _mm512_setzero_ps();
  for (int d = 0; d < HD; ++d) {
    const __m512 k0 = _mm512_loadu_ps(kt + d * tile_keys), k1 = _mm512_loadu_ps(kt + d * tile_keys + 16);
    DUALPATH_UNROLL
    for (uint64_t r = 0; r < tile_rows; ++r) {
      const __m512 qv = _mm512_set1_ps(q[r * HD + d]);
      acc[r][0] = _mm512_fmadd_ps(qv, k0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(qv, k1, acc[r][1]);
    }
  }
  const __m512 sv = _mm512_set1_ps(scale);
  DUALPATH_UNROLL
  for (uint64_t r = 0; r < tile_rows; ++r) {
    _mm512_storeu_ps(s + r * s_stride, _mm512_mul_ps(acc[r][0], sv));
    _mm512_storeu_ps(s + r * s_stride + 16, _mm512_mul_ps(acc[r][1], sv));
  }
}

template <int HD>
DUALPATH_AVX512 void scores(const float* q, uint64_t rows, const float* kt, uint64_t keys, float scale, float* s,
                            uint64_t s_stride) {
  // Keys outside, rows inside: a key group (HD × 32 floats) stays in L1 across the rows.
  for (uint64_t j = 0; j < keys; j += tile_keys)
    for (uint64_t r = 0; r < rows; r += tile_rows)
      scores_block<HD>(q + r * HD, kt + j * HD, scale, s + r * s_stride + j, s_stride);
}

// R rows of output (R·HD/16 = 16 accumulators) over keys [j0, j1).
template <int HD, int R>
DUALPATH_AVX512 void values_block(const float* p, uint64_t p_stride, uint64_t j0, uint64_t j1, const float* v,
                                  uint64_t v_stride, float* o) {
  constexpr int C = HD / 16;
  __m512 acc[R][C];
  DUALPATH_UNROLL
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_loadu_ps(o + r * HD + c * 16);
  for (uint64_t j = j0; j < j1; ++j) {
    __m512 vc[C];
    DUALPATH_UNROLL
    for (int c = 0; c < C; ++c) vc[c] = _mm512_loadu_ps(v + j * v_stride + c * 16);
    DUALPATH_UNROLL
    for (int r = 0; r < R; ++r) {
      const __m512 pv = _mm512_set1_ps(p[r * p_stride + j]);
      DUALPATH_UNROLL
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(pv, vc[c], acc[r][c]);
    }
  }
  DUALPATH_UNROLL
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(o + r * HD + c * 16, acc[r][c]);
}

template <int HD>
DUALPATH_AVX512 void values(const float* p, uint64_t p_stride, uint64_t rows, uint64_t keys, const float* v,
                            uint64_t v_stride, float* o) {
  constexpr int R = 256 / HD;  // 16 accumulators; 8, 4 or 2 rows, each a divisor of tile_rows
  for (uint64_t j0 = 0; j0 < keys; j0 += value_chunk) {
    const uint64_t j1 = std::min(keys, j0 + value_chunk);
    for (uint64_t r = 0; r < rows; r += R)
      values_block<HD, R>(p + r * p_stride, p_stride, j0, j1, v, v_stride, o + r * HD);
  }
}

}  // namespace

bool tile_scores_avx512(const float* q, uint64_t rows, uint32_t hd, const float* kt, uint64_t keys, float scale,
                        float* s, uint64_t s_stride) {
  return has_avx512f() && for_head_width(hd, [&](auto w) { scores<w.value>(q, rows, kt, keys, scale, s, s_stride); });
}

bool tile_values_avx512(const float* p, uint64_t p_stride, uint64_t rows, uint64_t keys, const float* v,
                        uint64_t v_stride, uint32_t hd, float* o) {
  return has_avx512f() && for_head_width(hd, [&](auto w) { values<w.value>(p, p_stride, rows, keys, v, v_stride, o); });
}

}  // namespace dualpath::gpu::cpu

#else

namespace dualpath::gpu::cpu {

bool tile_scores_avx512(const float*, uint64_t, uint32_t, const float*, uint64_t, float, float*, uint64_t) {
  return false;
}
bool tile_values_avx512(const float*, uint64_t, uint64_t, uint64_t, const float*, uint64_t, uint32_t, float*) {
  return false;
}

}  // namespace dualpath::gpu::cpu

#endif
