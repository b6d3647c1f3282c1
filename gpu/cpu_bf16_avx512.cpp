#include "gpu/cpu_bf16_avx512.hpp"

#include <algorithm>

#include "gpu/cpu_bf16_rows.hpp"
#include "gpu/cpu_simd.hpp"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__)
#include <immintrin.h>
#define DUALPATH_AVX512 __attribute__((target("avx512f,avx2,fma")))

namespace dualpath::gpu::cpu {

namespace {

using namespace rows;

// Half of the rows ahead asked in each pass, by bytes, as measured on the AVX-512 VMs when the asking was split
// over the two passes; their passes' times were not measured (the AVX2 kernels' split follows theirs).
constexpr ask_split split{50, 0};

// Sixteen bf16 values as floats (bf16 is the high half of an fp32).
DUALPATH_AVX512 inline __m512 widen16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  // The zero-masked forms: the plain ones start from an "undefined" vector that GCC 12 warns about.
  const __m512i wide = _mm512_maskz_cvtepu16_epi32(0xFFFF, h);
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, wide, 16));
}

// Lane i of the result = the sum of a[i]'s sixteen lanes.
DUALPATH_AVX512 inline __m256 sum_lanes(const __m512* a) {
  __m256 h[8];
  DUALPATH_UNROLL
  for (int i = 0; i < 8; ++i) {  // zero-masked extracts: the plain forms draw GCC 12's "uninitialized" warning
    const __m512d v = _mm512_castps_pd(a[i]);
    h[i] = _mm256_add_ps(_mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xFF, v, 0)),
                         _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xFF, v, 1)));
  }
  const __m256 s01 = _mm256_hadd_ps(h[0], h[1]), s23 = _mm256_hadd_ps(h[2], h[3]), s45 = _mm256_hadd_ps(h[4], h[5]),
               s67 = _mm256_hadd_ps(h[6], h[7]);
  const __m256 s03 = _mm256_hadd_ps(s01, s23), s47 = _mm256_hadd_ps(s45, s67);
  return _mm256_add_ps(_mm256_permute2f128_ps(s03, s47, 0x20), _mm256_permute2f128_ps(s03, s47, 0x31));
}

// R query rows [r0, r0 + R) of head g against the keys of tokens [t0, t0 + n), n <= 8.
template <int HD, int R>
DUALPATH_AVX512 void score_rows(const float* qg, uint64_t rq, uint32_t g, uint64_t r0, const std::byte* base,
                                uint64_t stride, uint64_t off, uint32_t t0, uint32_t n, float scale, float* s,
                                uint64_t ctx, uint64_t j0, uint32_t prefetch_width, uint32_t tokens, stream_ask far) {
  constexpr int C = HD / 16;
  __m512 q[R][C], acc[R][token_group];
  DUALPATH_UNROLL
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) q[r][c] = _mm512_loadu_ps(qg + ((g * rq + r0 + r) * HD + c * 16));
  for (uint32_t i = 0; i < token_group; ++i) {
    if (i >= n) {
      DUALPATH_UNROLL
      for (int r = 0; r < R; ++r) acc[r][i] = _mm512_setzero_ps();
      continue;
    }
    if (prefetch_width && t0 + i + prefetch_ahead < tokens)
      prefetch(row(base, stride, t0 + i + prefetch_ahead, off), prefetch_width);
    far.token();
    const uint16_t* k = row(base, stride, t0 + i, off + uint64_t(g) * HD);
    __m512 kc[C];
    DUALPATH_UNROLL
    for (int c = 0; c < C; ++c) kc[c] = widen16(k + c * 16);
    DUALPATH_UNROLL
    for (int r = 0; r < R; ++r) {
      acc[r][i] = _mm512_mul_ps(q[r][0], kc[0]);
      DUALPATH_UNROLL
      for (int c = 1; c < C; ++c) acc[r][i] = _mm512_fmadd_ps(q[r][c], kc[c], acc[r][i]);
    }
  }
  DUALPATH_UNROLL
  for (int r = 0; r < R; ++r) {
    store_scores(s + (g * rq + r0 + r) * ctx + j0 + t0, _mm256_mul_ps(sum_lanes(acc[r]), _mm256_set1_ps(scale)), n);
  }
}

template <int HD>
DUALPATH_AVX512 void scores(const float* qg, uint32_t kv_heads, uint64_t rq, const std::byte* base, uint32_t tokens,
                            uint64_t stride, uint64_t off, float scale, float* s, uint64_t ctx, uint64_t j0,
                            rows_ahead ahead) {
  constexpr int R = HD == 128 ? 1 : 2;  // query rows in registers beside a key and 8·R sums
  walk_keys<R>(kv_heads, rq, tokens, kv_heads * HD, stream_ahead(ahead, stride, tokens, kv_heads, HD, split),
               [&](auto rc, uint32_t g, uint64_t r0, uint32_t t0, uint32_t n, uint32_t near, const stream_ask& far) {
                 score_rows<HD, rc.value>(qg, rq, g, r0, base, stride, off, t0, n, scale, s, ctx, j0, near, tokens,
                                          far);
               });
}

// Output rows [r0, r0 + R) of head g += the weighted values of tokens [t0, t1).
template <int HD, int R>
DUALPATH_AVX512 void value_rows(const float* s, uint64_t rq, uint64_t ctx, uint64_t j0, const std::byte* base,
                                uint64_t stride, uint64_t off, uint32_t g, uint64_t r0, uint32_t t0, uint32_t t1,
                                float* og, stream_ask far) {
  constexpr int C = HD / 16;
  __m512 o[R][C];
  DUALPATH_UNROLL
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) o[r][c] = _mm512_loadu_ps(og + (g * rq + r0 + r) * HD + c * 16);
  for (uint32_t t = t0; t < t1; ++t) {
    far.token();
    const uint16_t* v = row(base, stride, t, off + uint64_t(g) * HD);
    __m512 vc[C];
    DUALPATH_UNROLL
    for (int c = 0; c < C; ++c) vc[c] = widen16(v + c * 16);
    DUALPATH_UNROLL
    for (int r = 0; r < R; ++r) {
      const __m512 p = _mm512_set1_ps(s[(g * rq + r0 + r) * ctx + j0 + t]);
      DUALPATH_UNROLL
      for (int c = 0; c < C; ++c) o[r][c] = _mm512_fmadd_ps(p, vc[c], o[r][c]);
    }
  }
  DUALPATH_UNROLL
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(og + (g * rq + r0 + r) * HD + c * 16, o[r][c]);
}

template <int HD>
DUALPATH_AVX512 void values(const float* s, uint32_t kv_heads, uint64_t rq, uint64_t ctx, uint64_t j0,
                            const std::byte* base, uint32_t tokens, uint64_t stride, uint64_t off, float* og,
                            rows_ahead ahead) {
  // Two rows of a whole head in registers: one block of all HD dimensions.
  walk_values<2>(kv_heads, rq, tokens, HD, HD, stream_ahead(ahead, stride, tokens, kv_heads, HD, split),
                 [&](auto rc, uint32_t g, uint64_t r0, uint32_t, uint32_t t0, uint32_t t1, const stream_ask& far) {
                   value_rows<HD, rc.value>(s, rq, ctx, j0, base, stride, off, g, r0, t0, t1, og, far);
                 });
}

}  // namespace

bool bf16_ask_split_avx512(uint32_t hd, ask_split& out) {
  if (!has_avx512f() || !for_head_width(hd, [](auto) {})) return false;
  out = split;
  return true;
}

bool bf16_scores_avx512(const float* qg, uint32_t kv_heads, uint64_t rq, uint32_t hd, const std::byte* base,
                        uint32_t tokens, uint64_t stride, uint64_t off, float scale, float* s, uint64_t ctx,
                        uint64_t j0, rows_ahead ahead) {
  return has_avx512f() && for_head_width(hd, [&](auto w) {
           scores<w.value>(qg, kv_heads, rq, base, tokens, stride, off, scale, s, ctx, j0, ahead);
         });
}

bool bf16_weighted_values_avx512(const float* s, uint32_t kv_heads, uint64_t rq, uint64_t ctx, uint64_t j0,
                                 const std::byte* base, uint32_t tokens, uint64_t stride, uint64_t off, uint32_t hd,
                                 float* og, rows_ahead ahead) {
  return has_avx512f() && for_head_width(hd, [&](auto w) {
           values<w.value>(s, kv_heads, rq, ctx, j0, base, tokens, stride, off, og, ahead);
         });
}

}  // namespace dualpath::gpu::cpu

#else

namespace dualpath::gpu::cpu {

bool bf16_ask_split_avx512(uint32_t, ask_split&) { return false; }

bool bf16_scores_avx512(const float*, uint32_t, uint64_t, uint32_t, const std::byte*, uint32_t, uint64_t, uint64_t,
                        float, float*, uint64_t, uint64_t, rows_ahead) {
  return false;
}

bool bf16_weighted_values_avx512(const float*, uint32_t, uint64_t, uint64_t, uint64_t, const std::byte*, uint32_t,
                                 uint64_t, uint64_t, uint32_t, float*, rows_ahead) {
  return false;
}

}  // namespace dualpath::gpu::cpu

#endif
