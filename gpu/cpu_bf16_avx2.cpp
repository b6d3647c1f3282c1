#include "gpu/cpu_bf16_avx2.hpp"

#include <algorithm>

#include "gpu/cpu_bf16_rows.hpp"
#include "gpu/cpu_simd.hpp"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__)
#include <immintrin.h>
#define DUALPATH_AVX2 __attribute__((target("avx2,fma")))

namespace dualpath::gpu::cpu {

namespace {

using namespace rows;

// Over KV in L1 on Zen 2 the key pass takes 30.7 cycles a token and head, the softmax 7 and the value pass 17.3.
// Asked half in each pass, by bytes, the value pass asked nearly twice as fast as the key pass and the softmax
// nothing; asked 45 / 20 / 35 the attention of 8 requests × 4.6K tokens read its KV from DRAM 8-10% faster
// (60 / 0 / 40: 4-8%; docs/experiments.md, "Limits").
constexpr ask_split split{45, 20};

// Eight bf16 values as floats (bf16 is the high half of an fp32).
DUALPATH_AVX2 inline __m256 widen8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Lane i of the result = the sum of a[i]'s eight lanes.
DUALPATH_AVX2 inline __m256 sum_lanes(const __m256* a) {
  const __m256 s01 = _mm256_hadd_ps(a[0], a[1]), s23 = _mm256_hadd_ps(a[2], a[3]), s45 = _mm256_hadd_ps(a[4], a[5]),
               s67 = _mm256_hadd_ps(a[6], a[7]);
  const __m256 s03 = _mm256_hadd_ps(s01, s23), s47 = _mm256_hadd_ps(s45, s67);
  return _mm256_add_ps(_mm256_permute2f128_ps(s03, s47, 0x20), _mm256_permute2f128_ps(s03, s47, 0x31));
}

// dot(q, k) as eight partial sums, k already widened (C registers of eight); two chains so that the FMAs of
// one row do not wait on each other.
template <int C>
DUALPATH_AVX2 inline __m256 dot8(const float* q, const __m256* k) {
  __m256 a = _mm256_mul_ps(_mm256_loadu_ps(q), k[0]), b = _mm256_mul_ps(_mm256_loadu_ps(q + 8), k[1]);
  DUALPATH_UNROLL
  for (int c = 2; c < C; c += 2) {
    a = _mm256_fmadd_ps(_mm256_loadu_ps(q + c * 8), k[c], a);
    b = _mm256_fmadd_ps(_mm256_loadu_ps(q + c * 8 + 8), k[c + 1], b);
  }
  return _mm256_add_ps(a, b);
}

// R query rows [r0, r0 + R) of head g against the keys of tokens [t0, t0 + n), n <= 8.
template <int HD, int R>
DUALPATH_AVX2 void score_rows(const float* qg, uint64_t rq, uint32_t g, uint64_t r0, const std::byte* base,
                              uint64_t stride, uint64_t off, uint32_t t0, uint32_t n, float scale, float* s,
                              uint64_t ctx, uint64_t j0, uint32_t prefetch_width, uint32_t tokens, stream_ask far) {
  constexpr int C = HD / 8;
  __m256 acc[R][token_group];
  for (uint32_t i = 0; i < token_group; ++i) {
    if (i >= n) {
      DUALPATH_UNROLL
      for (int r = 0; r < R; ++r) acc[r][i] = _mm256_setzero_ps();
      continue;
    }
    if (prefetch_width && t0 + i + prefetch_ahead < tokens)
      prefetch(row(base, stride, t0 + i + prefetch_ahead, off), prefetch_width);
    far.token();
    const uint16_t* k = row(base, stride, t0 + i, off + uint64_t(g) * HD);
    __m256 kc[C];
    DUALPATH_UNROLL
    for (int c = 0; c < C; ++c) kc[c] = widen8(k + c * 8);
    DUALPATH_UNROLL
    for (int r = 0; r < R; ++r) acc[r][i] = dot8<C>(qg + (g * rq + r0 + r) * HD, kc);
  }
  DUALPATH_UNROLL
  for (int r = 0; r < R; ++r) {
    store_scores(s + (g * rq + r0 + r) * ctx + j0 + t0, _mm256_mul_ps(sum_lanes(acc[r]), _mm256_set1_ps(scale)), n);
  }
}

template <int HD>
DUALPATH_AVX2 void scores(const float* qg, uint32_t kv_heads, uint64_t rq, const std::byte* base, uint32_t tokens,
                          uint64_t stride, uint64_t off, float scale, float* s, uint64_t ctx, uint64_t j0,
                          rows_ahead ahead) {
  // The key slice is widened once for two query rows (a decode token of a group of two).
  walk_keys<2>(kv_heads, rq, tokens, kv_heads * HD, stream_ahead(ahead, stride, tokens, kv_heads, HD, split),
               [&](auto rc, uint32_t g, uint64_t r0, uint32_t t0, uint32_t n, uint32_t near, const stream_ask& far) {
                 score_rows<HD, rc.value>(qg, rq, g, r0, base, stride, off, t0, n, scale, s, ctx, j0, near, tokens,
                                          far);
               });
}

// Output rows [r0, r0 + R) of head g, dimensions [c0, c0 + 8·CB), += the weighted values of tokens [t0, t1).
template <int HD, int R, int CB>
DUALPATH_AVX2 void value_rows(const float* s, uint64_t rq, uint64_t ctx, uint64_t j0, const std::byte* base,
                              uint64_t stride, uint64_t off, uint32_t g, uint64_t r0, uint32_t c0, uint32_t t0,
                              uint32_t t1, float* og, stream_ask far) {
  __m256 o[R][CB];
  DUALPATH_UNROLL
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < CB; ++c) o[r][c] = _mm256_loadu_ps(og + (g * rq + r0 + r) * HD + c0 + c * 8);
  for (uint32_t t = t0; t < t1; ++t) {
    far.token();
    const uint16_t* v = row(base, stride, t, off + uint64_t(g) * HD + c0);
    __m256 vc[CB];
    DUALPATH_UNROLL
    for (int c = 0; c < CB; ++c) vc[c] = widen8(v + c * 8);
    DUALPATH_UNROLL
    for (int r = 0; r < R; ++r) {
      const __m256 p = _mm256_set1_ps(s[(g * rq + r0 + r) * ctx + j0 + t]);
      DUALPATH_UNROLL
      for (int c = 0; c < CB; ++c) o[r][c] = _mm256_fmadd_ps(p, vc[c], o[r][c]);
    }
  }
  DUALPATH_UNROLL
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < CB; ++c) _mm256_storeu_ps(og + (g * rq + r0 + r) * HD + c0 + c * 8, o[r][c]);
}

template <int HD>
DUALPATH_AVX2 void values(const float* s, uint32_t kv_heads, uint64_t rq, uint64_t ctx, uint64_t j0,
                          const std::byte* base, uint32_t tokens, uint64_t stride, uint64_t off, float* og,
                          rows_ahead ahead) {
  constexpr int CB = 4;  // two rows: 8 accumulators, 4 widened values, 12 of the 16 registers
  walk_values<2>(kv_heads, rq, tokens, HD, 8 * CB, stream_ahead(ahead, stride, tokens, kv_heads, HD, split),
                 [&](auto rc, uint32_t g, uint64_t r0, uint32_t c0, uint32_t t0, uint32_t t1, const stream_ask& far) {
                   value_rows<HD, rc.value, CB>(s, rq, ctx, j0, base, stride, off, g, r0, c0, t0, t1, og, far);
                 });
}

}  // namespace

bool bf16_ask_split_avx2(uint32_t hd, ask_split& out) {
  if (!has_avx2_fma() || !for_head_width(hd, [](auto) {})) return false;
  out = split;
  return true;
}

bool bf16_scores_avx2(const float* qg, uint32_t kv_heads, uint64_t rq, uint32_t hd, const std::byte* base,
                      uint32_t tokens, uint64_t stride, uint64_t off, float scale, float* s, uint64_t ctx, uint64_t j0,
                      rows_ahead ahead) {
  return has_avx2_fma() && for_head_width(hd, [&](auto w) {
           scores<w.value>(qg, kv_heads, rq, base, tokens, stride, off, scale, s, ctx, j0, ahead);
         });
}

bool bf16_weighted_values_avx2(const float* s, uint32_t kv_heads, uint64_t rq, uint64_t ctx, uint64_t j0,
                               const std::byte* base, uint32_t tokens, uint64_t stride, uint64_t off, uint32_t hd,
                               float* og, rows_ahead ahead) {
  return has_avx2_fma() && for_head_width(hd, [&](auto w) {
           values<w.value>(s, kv_heads, rq, ctx, j0, base, tokens, stride, off, og, ahead);
         });
}

}  // namespace dualpath::gpu::cpu

#else

namespace dualpath::gpu::cpu {

bool bf16_ask_split_avx2(uint32_t, ask_split&) { return false; }

bool bf16_scores_avx2(const float*, uint32_t, uint64_t, uint32_t, const std::byte*, uint32_t, uint64_t, uint64_t, float,
                      float*, uint64_t, uint64_t, rows_ahead) {
  return false;
}

bool bf16_weighted_values_avx2(const float*, uint32_t, uint64_t, uint64_t, uint64_t, const std::byte*, uint32_t,
                               uint64_t, uint64_t, uint32_t, float*, rows_ahead) {
  return false;
}

}  // namespace dualpath::gpu::cpu

#endif
