#include "gpu/cpu_bf16_avx512.hpp"

#include <algorithm>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__)
#include <immintrin.h>
#define DUALPATH_AVX512 __attribute__((target("avx512f,avx2,fma")))

namespace dualpath::gpu::cpu {

namespace {

// Tokens whose dot products are summed across lanes together (one 8-lane result).
constexpr uint32_t token_group = 8;
// Rows are read a slice at a time at a large stride, which the hardware prefetcher does not follow far
// enough; a row this many tokens on is asked for while the current one is used.
constexpr uint32_t prefetch_ahead = 16;
// Tokens per block of the value pass: a block's rows stay in L1/L2 while each head takes its slice of them.
constexpr uint32_t value_block = 64;
// Both passes ask for the rows this many tokens on (the caller's next block of 64) into L2 while they work on
// rows already in cache, so that the next block's keys and values are there when needed. Each core's misses
// in flight bound this (the prefetches wait for a free fill buffer), so the asking is spread as thinly as it
// goes: the key pass asks for the first half of a row's lines, the value pass for the second, and within a pass
// each KV head for its share. When the value pass alone asked for whole rows, a decode step (small, 8 × 4K)
// took 18.8–19.2 ms on one thread and 10.2–11.6 on two; with the asking split over both passes 14.9–15.0 and
// 8.5–9.9 (interleaved runs; docs/experiments.md). 32 or 128 tokens ahead were within the noise of 64.
constexpr uint32_t prefetch_far = 64;

// Bytes [begin, end) of every row ahead that one KV head's pass asks for.
struct row_share {
  uint64_t begin = 0, end = 0;
};

// The passes of a block, each asking for its half of the lines of every row ahead.
enum class pass { keys, values };

// KV head g's share (of `heads`) of the lines of a `stride`-byte row that pass p asks for: the first half of
// the row's lines for the key pass, the rest for the value pass.
row_share share_of(pass p, uint64_t stride, uint32_t g, uint32_t heads) {
  const uint64_t lines = (stride + 63) / 64, first = p == pass::keys ? 0 : lines / 2,
                 n = (p == pass::keys ? lines / 2 : lines) - first;
  return {(first + n * g / heads) * 64, (first + n * (g + 1) / heads) * 64};
}

// The share of row t + prefetch_far, into L2, if that row exists (`readable` rows from base).
inline void prefetch_far_row(const std::byte* base, uint64_t stride, uint64_t t, row_share share, uint32_t readable) {
  if (share.begin >= share.end || t + prefetch_far >= readable) return;
  const auto* far = reinterpret_cast<const char*>(base + (t + prefetch_far) * stride);
  for (uint64_t b = share.begin; b < share.end; b += 64) __builtin_prefetch(far + b, 0, 1);
}

bool usable(uint32_t hd) { return (hd == 32 || hd == 64 || hd == 128) && __builtin_cpu_supports("avx512f"); }

const uint16_t* row(const std::byte* base, uint64_t stride, uint32_t t, uint64_t off) {
  return reinterpret_cast<const uint16_t*>(base + t * stride) + off;
}

void prefetch(const uint16_t* p, uint32_t elements) {
  const auto* c = reinterpret_cast<const char*>(p);
  for (uint32_t b = 0; b < elements * 2; b += 64) __builtin_prefetch(c + b);
}

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
                                uint64_t ctx, uint64_t j0, uint32_t prefetch_width, uint32_t tokens, row_share far,
                                uint32_t readable) {
  constexpr int C = HD / 16;
  __m512 q[R][C], acc[R][token_group];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) q[r][c] = _mm512_loadu_ps(qg + ((g * rq + r0 + r) * HD + c * 16));
  for (uint32_t i = 0; i < token_group; ++i) {
    if (i >= n) {
      for (int r = 0; r < R; ++r) acc[r][i] = _mm512_setzero_ps();
      continue;
    }
    if (prefetch_width && t0 + i + prefetch_ahead < tokens)
      prefetch(row(base, stride, t0 + i + prefetch_ahead, off), prefetch_width);
    prefetch_far_row(base, stride, t0 + i, far, readable);
    const uint16_t* k = row(base, stride, t0 + i, off + uint64_t(g) * HD);
    __m512 kc[C];
    for (int c = 0; c < C; ++c) kc[c] = widen16(k + c * 16);
    for (int r = 0; r < R; ++r) {
      acc[r][i] = _mm512_mul_ps(q[r][0], kc[0]);
      for (int c = 1; c < C; ++c) acc[r][i] = _mm512_fmadd_ps(q[r][c], kc[c], acc[r][i]);
    }
  }
  alignas(32) float out[token_group];
  for (int r = 0; r < R; ++r) {
    _mm256_store_ps(out, _mm256_mul_ps(sum_lanes(acc[r]), _mm256_set1_ps(scale)));
    std::copy(out, out + n, s + (g * rq + r0 + r) * ctx + j0 + t0);
  }
}

template <int HD>
DUALPATH_AVX512 void scores(const float* qg, uint32_t kv_heads, uint64_t rq, const std::byte* base, uint32_t tokens,
                            uint64_t stride, uint64_t off, float scale, float* s, uint64_t ctx, uint64_t j0,
                            uint32_t readable) {
  constexpr int R = HD == 128 ? 1 : 2;  // query rows in registers beside a key and 8·R sums
  const uint32_t width = kv_heads * HD;
  for (uint32_t t0 = 0; t0 < tokens; t0 += token_group) {
    const uint32_t n = std::min(token_group, tokens - t0);
    for (uint32_t g = 0; g < kv_heads; ++g) {
      // The first call of a block asks for the rows near (head 0) and far (head g's share); the others, none.
      const row_share far = share_of(pass::keys, stride, g, kv_heads);
      uint64_t r0 = 0;
      for (; r0 + R <= rq; r0 += R)
        score_rows<HD, R>(qg, rq, g, r0, base, stride, off, t0, n, scale, s, ctx, j0, g == 0 && r0 == 0 ? width : 0,
                          tokens, r0 == 0 ? far : row_share{}, readable);
      for (; r0 < rq; ++r0)
        score_rows<HD, 1>(qg, rq, g, r0, base, stride, off, t0, n, scale, s, ctx, j0, g == 0 && r0 == 0 ? width : 0,
                          tokens, r0 == 0 ? far : row_share{}, readable);
    }
  }
}

// Output rows [r0, r0 + R) of head g += the weighted values of tokens [t0, t1).
template <int HD, int R>
DUALPATH_AVX512 void value_rows(const float* s, uint64_t rq, uint64_t ctx, uint64_t j0, const std::byte* base,
                                uint64_t stride, uint64_t off, uint32_t g, uint64_t r0, uint32_t t0, uint32_t t1,
                                float* og, row_share far, uint32_t readable) {
  constexpr int C = HD / 16;
  __m512 o[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) o[r][c] = _mm512_loadu_ps(og + (g * rq + r0 + r) * HD + c * 16);
  for (uint32_t t = t0; t < t1; ++t) {
    prefetch_far_row(base, stride, t, far, readable);
    const uint16_t* v = row(base, stride, t, off + uint64_t(g) * HD);
    __m512 vc[C];
    for (int c = 0; c < C; ++c) vc[c] = widen16(v + c * 16);
    for (int r = 0; r < R; ++r) {
      const __m512 p = _mm512_set1_ps(s[(g * rq + r0 + r) * ctx + j0 + t]);
      for (int c = 0; c < C; ++c) o[r][c] = _mm512_fmadd_ps(p, vc[c], o[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(og + (g * rq + r0 + r) * HD + c * 16, o[r][c]);
}

template <int HD>
DUALPATH_AVX512 void values(const float* s, uint32_t kv_heads, uint64_t rq, uint64_t ctx, uint64_t j0,
                            const std::byte* base, uint32_t tokens, uint64_t stride, uint64_t off, float* og,
                            uint32_t readable) {
  constexpr int R = 2;
  for (uint32_t t0 = 0; t0 < tokens; t0 += value_block) {
    const uint32_t t1 = std::min(tokens, t0 + value_block);
    for (uint32_t g = 0; g < kv_heads; ++g) {
      // Head g's first call asks for its share of the rows ahead; the head's other calls, none.
      const row_share far = share_of(pass::values, stride, g, kv_heads);
      uint64_t r0 = 0;
      for (; r0 + R <= rq; r0 += R)
        value_rows<HD, R>(s, rq, ctx, j0, base, stride, off, g, r0, t0, t1, og, r0 == 0 ? far : row_share{}, readable);
      for (; r0 < rq; ++r0)
        value_rows<HD, 1>(s, rq, ctx, j0, base, stride, off, g, r0, t0, t1, og, r0 == 0 ? far : row_share{}, readable);
    }
  }
}

}  // namespace

bool bf16_scores_avx512(const float* qg, uint32_t kv_heads, uint64_t rq, uint32_t hd, const std::byte* base,
                        uint32_t tokens, uint64_t stride, uint64_t off, float scale, float* s, uint64_t ctx,
                        uint64_t j0, uint32_t readable) {
  if (!usable(hd)) return false;
  if (hd == 32) scores<32>(qg, kv_heads, rq, base, tokens, stride, off, scale, s, ctx, j0, readable);
  if (hd == 64) scores<64>(qg, kv_heads, rq, base, tokens, stride, off, scale, s, ctx, j0, readable);
  if (hd == 128) scores<128>(qg, kv_heads, rq, base, tokens, stride, off, scale, s, ctx, j0, readable);
  return true;
}

bool bf16_weighted_values_avx512(const float* s, uint32_t kv_heads, uint64_t rq, uint64_t ctx, uint64_t j0,
                                 const std::byte* base, uint32_t tokens, uint64_t stride, uint64_t off, uint32_t hd,
                                 float* og, uint32_t readable) {
  if (!usable(hd)) return false;
  if (hd == 32) values<32>(s, kv_heads, rq, ctx, j0, base, tokens, stride, off, og, readable);
  if (hd == 64) values<64>(s, kv_heads, rq, ctx, j0, base, tokens, stride, off, og, readable);
  if (hd == 128) values<128>(s, kv_heads, rq, ctx, j0, base, tokens, stride, off, og, readable);
  return true;
}

}  // namespace dualpath::gpu::cpu

#else

namespace dualpath::gpu::cpu {

bool bf16_scores_avx512(const float*, uint32_t, uint64_t, uint32_t, const std::byte*, uint32_t, uint64_t, uint64_t,
                        float, float*, uint64_t, uint64_t, uint32_t) {
  return false;
}

bool bf16_weighted_values_avx512(const float*, uint32_t, uint64_t, uint64_t, uint64_t, const std::byte*, uint32_t,
                                 uint64_t, uint64_t, uint32_t, float*, uint32_t) {
  return false;
}

}  // namespace dualpath::gpu::cpu

#endif
