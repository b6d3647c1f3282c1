#include "gpu/cpu_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "gpu/bf16.hpp"
#include "gpu/cpu_bf16_avx2.hpp"
#include "gpu/cpu_bf16_avx512.hpp"
#include "gpu/cpu_simd.hpp"

// Not under TSan: the clones' ifunc resolvers run while the dynamic loader relocates, before TSan's runtime
// is up, and their instrumented code crashes there (`make tsan`).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define DUALPATH_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DUALPATH_MULTIVERSION
#endif

namespace dualpath::gpu::cpu {

namespace {

// exp for x <= 0 (softmax after subtracting the max): 2^(x·log2 e) split into a rounded integer n and a
// fraction f in [-0.5, 0.5], 2^f by its degree-6 Taylor polynomial (relative error ~1e-7), 2^n written into
// the exponent field. The fraction carries the rounding of the product x·log2 e where the compiler does not
// fuse it into an FMA (the avx2 and default clones): there the error grows to 2e-6 of e^x at x = -60, on
// values far below anything a softmax sum or a silu output keeps. Taking the fraction exactly (x - n·ln 2, ln 2
// in two parts) cost 8% of a prefill pass, and any change here moves every served token's last bits, which
// `serve --verify` against a recompute over other shapes can turn into a different sampled token. Written with
// GCC/Clang vector extensions for any lane count: sixteen lanes where rows are long (one AVX-512 register, or
// two eight-lane halves without AVX-512: exp_row), eight in the reductions of the attention's dot products.
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

template <class VF, class VI>
__attribute__((always_inline)) inline VF exp_nonpositive_lanes(VF x) {
  const VF lo = VF{} - 87.0f;
  x = x < lo ? lo : x;
  const VF t = x * 1.44269504088896341f;
  const VF n = (t + 12582912.0f) - 12582912.0f;  // round to nearest by adding 1.5·2^23: no call, no branch
  const VF f = t - n;
  VF p = VF{} + 1.5353362e-4f;
  p = p * f + 1.3398874e-3f;
  p = p * f + 9.6180081e-3f;
  p = p * f + 5.5503324e-2f;
  p = p * f + 2.4022652e-1f;
  p = p * f + 6.9314718e-1f;
  p = p * f + 1.0f;
  const VI bits = (__builtin_convertvector(n, VI) + 127) << 23;
  return p * (VF)bits;  // same-size vector cast: a bit reinterpretation
}

// Lane i of the result = the sum of a[i]'s lanes: three rounds of pairwise adds of interleaved halves.
__attribute__((always_inline)) inline v8f sum_lanes8(const v8f* a) {
  v8f c[4], d[2];
  for (int i = 0; i < 4; ++i)
    c[i] = __builtin_shufflevector(a[2 * i], a[2 * i + 1], 0, 8, 2, 10, 4, 12, 6, 14) +
           __builtin_shufflevector(a[2 * i], a[2 * i + 1], 1, 9, 3, 11, 5, 13, 7, 15);
  for (int i = 0; i < 2; ++i)  // lanes: a, b, e, f sums of the first and second halves
    d[i] = __builtin_shufflevector(c[2 * i], c[2 * i + 1], 0, 1, 8, 9, 4, 5, 12, 13) +
           __builtin_shufflevector(c[2 * i], c[2 * i + 1], 2, 3, 10, 11, 6, 7, 14, 15);
  return __builtin_shufflevector(d[0], d[1], 0, 1, 2, 3, 8, 9, 10, 11) +
         __builtin_shufflevector(d[0], d[1], 4, 5, 6, 7, 12, 13, 14, 15);
}

inline float exp_nonpositive(float x) {
  v8f v = v8f{} + x;
  return exp_nonpositive_lanes<v8f, v8i>(v)[0];
}

// row[j] = exp(row[j] - mx) for j < n, sixteen lanes at a time; returns their sum. `Half` is the vector the
// sixteen lanes are computed in: v16f where one register holds them (AVX-512), else two v8f. The values and the
// order of the sum are the same either way (lane k of sixteen sums j ≡ k mod 16; then lanes 0 to 15), but GCC
// 12 compiles a 16-lane vector on AVX2 through the stack (the integer conversion and shift lane by lane), which
// took 1.75 times as long a value as two halves (docs/experiments.md).
template <class Half, class HalfInt>
__attribute__((always_inline)) inline float exp_row(float* row, uint64_t n, float mx) {
  constexpr int lanes = sizeof(Half) / sizeof(float), parts = 16 / lanes;
  Half acc[parts] = {};
  uint64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int p = 0; p < parts; ++p) {
      Half v;
      std::memcpy(&v, row + j + p * lanes, sizeof v);
      v = exp_nonpositive_lanes<Half, HalfInt>(v - mx);
      std::memcpy(row + j + p * lanes, &v, sizeof v);
      acc[p] += v;
    }
  float sum = 0;
  for (int p = 0; p < parts; ++p)
    for (int k = 0; k < lanes; ++k) sum += acc[p][k];
  for (; j < n; ++j) sum += (row[j] = exp_nonpositive(row[j] - mx));
  return sum;
}

// Token t's cached row (BF16, `off` elements into its slot) as floats: the score and value passes
// both read the KV cache this way.
inline void widen_bf16_row(const std::byte* slot, uint64_t off, uint32_t width, float* out) {
  const auto* src = reinterpret_cast<const uint16_t*>(slot) + off;
  for (uint32_t d = 0; d < width; ++d) {
    const uint32_t u = uint32_t(src[d]) << 16;
    std::memcpy(&out[d], &u, 4);
  }
}

// Rows of the KV cache are read a slice at a time at a large stride, which the hardware prefetcher does not
// follow far enough: ask for the slice of the row `ahead` tokens on (measured: the loads were most of the
// direct attention's time).
constexpr uint32_t prefetch_ahead = 8;
inline void prefetch_row(const std::byte* slot, uint64_t off, uint32_t width) {
  const auto* p = reinterpret_cast<const char*>(reinterpret_cast<const uint16_t*>(slot) + off);
  for (uint32_t b = 0; b < width * 2; b += 64) __builtin_prefetch(p + b);
}

}  // namespace

DUALPATH_MULTIVERSION
void rmsnorm(const float* x, const float* w, float* out, uint64_t rows, uint32_t dim, float eps) {
  for (uint64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* o = out + r * dim;
    // Sixteen partial sums, then their total in lane order: one fixed order for every row, as vectors (a
    // single running float sum is a chain of dependent adds the compiler may not reorder).
    v16f acc{};
    uint32_t i = 0;
    for (; i + 16 <= dim; i += 16) {
      v16f v;
      std::memcpy(&v, xr + i, sizeof v);
      acc += v * v;
    }
    float ss = 0;
    for (int l = 0; l < 16; ++l) ss += acc[l];
    for (; i < dim; ++i) ss += xr[i] * xr[i];
    const float inv = 1.0f / std::sqrt(ss / float(dim) + eps);
    for (i = 0; i < dim; ++i) o[i] = xr[i] * inv * w[i];
  }
}

rope_angles rope_table(const uint32_t* pos, uint64_t rows, uint32_t head_dim, double theta) {
  rope_angles a;
  a.half = head_dim / 2;
  std::vector<double> inv_freq(a.half);
  for (uint32_t i = 0; i < a.half; ++i) inv_freq[i] = std::pow(theta, -2.0 * i / double(head_dim));
  a.cos.resize(rows * a.half);
  a.sin.resize(rows * a.half);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < a.half; ++i) {
      const double angle = double(pos[r]) * inv_freq[i];
      a.cos[r * a.half + i] = float(std::cos(angle));
      a.sin[r * a.half + i] = float(std::sin(angle));
    }
  return a;
}

DUALPATH_MULTIVERSION
void rope(float* x, uint64_t rows, uint64_t row_stride, uint32_t heads, const rope_angles& a, uint64_t row0) {
  const uint32_t half = a.half;
  for (uint64_t r = 0; r < rows; ++r) {
    const float* c = &a.cos[(row0 + r) * half];
    const float* s = &a.sin[(row0 + r) * half];
    for (uint32_t h = 0; h < heads; ++h) {
      float* v = x + r * row_stride + uint64_t(h) * 2 * half;
      // Sixteen pairs at a time (the compiler would not vectorise the loop: its two halves are one array).
      uint32_t i = 0;
      for (; i + 16 <= half; i += 16) {
        v16f p, q, cv, sv;
        std::memcpy(&p, v + i, sizeof p);
        std::memcpy(&q, v + i + half, sizeof q);
        std::memcpy(&cv, c + i, sizeof cv);
        std::memcpy(&sv, s + i, sizeof sv);
        const v16f lo = p * cv - q * sv, hi = q * cv + p * sv;
        std::memcpy(v + i, &lo, sizeof lo);
        std::memcpy(v + i + half, &hi, sizeof hi);
      }
      for (; i < half; ++i) {
        const float p = v[i], q = v[i + half];
        v[i] = p * c[i] - q * s[i];
        v[i + half] = q * c[i] + p * s[i];
      }
    }
  }
}

void rope(float* x, uint64_t rows, uint64_t row_stride, uint32_t heads, uint32_t head_dim, const uint32_t* pos,
          double theta) {
  rope(x, rows, row_stride, heads, rope_table(pos, rows, head_dim, theta), 0);
}

DUALPATH_MULTIVERSION
void online_exp(float* s, uint64_t rows, uint64_t cols, const uint32_t* valid, float* max, float* sum, float* rescale) {
  const bool wide = has_avx512f();
  for (uint64_t r = 0; r < rows; ++r) {
    float* row = s + r * cols;
    const uint64_t n = std::min<uint64_t>(valid[r], cols);
    float mx = max[r];
#pragma omp simd reduction(max : mx)
    for (uint64_t j = 0; j < n; ++j) mx = row[j] > mx ? row[j] : mx;
    rescale[r] = mx == max[r] ? 1.0f : exp_nonpositive(max[r] - mx);  // max[r] = -inf gives 0
    sum[r] = sum[r] * rescale[r] + (wide ? exp_row<v16f, v16i>(row, n, mx) : exp_row<v8f, v8i>(row, n, mx));
    max[r] = mx;
    if (n < cols) std::memset(row + n, 0, (cols - n) * sizeof(float));
  }
}

// silu(g) · u for the sizeof(V) / 4 lanes at g, u, into o.
template <class V, class VI>
__attribute__((always_inline)) inline void silu_lanes(const float* g, const float* u, float* o) {
  V gv, uv;
  std::memcpy(&gv, g, sizeof gv);
  std::memcpy(&uv, u, sizeof uv);
  const V e = exp_nonpositive_lanes<V, VI>(gv > 0.0f ? -gv : gv);
  const V v = (gv > 0.0f ? gv : gv * e) / (1.0f + e) * uv;
  std::memcpy(o, &v, sizeof v);
}

DUALPATH_MULTIVERSION
void silu_mul(const float* gu, float* out, uint64_t rows, uint32_t inter) {
  const bool wide = has_avx512f();  // sixteen lanes in one register, else two halves (exp_row says why)
  for (uint64_t r = 0; r < rows; ++r) {
    const float* g = gu + r * 2 * inter;
    const float* u = g + inter;
    float* o = out + r * inter;
    // silu(g) = g / (1 + e^-g), with the exponential only ever of -|g| (the vector exp above): for g < 0 the
    // same value is g·e^g / (1 + e^g).
    uint32_t i = 0;
    for (; i + 16 <= inter; i += 16) {
      if (wide) {
        silu_lanes<v16f, v16i>(g + i, u + i, o + i);
      } else {
        silu_lanes<v8f, v8i>(g + i, u + i, o + i);
        silu_lanes<v8f, v8i>(g + i + 8, u + i + 8, o + i + 8);
      }
    }
    for (; i < inter; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  }
}

DUALPATH_MULTIVERSION
void bf16_to_f32(const uint16_t* in, float* out, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t u = uint32_t(in[i]) << 16;
    std::memcpy(out + i, &u, 4);
  }
}

void f32_to_bf16(const float* in, uint16_t* out, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) out[i] = float_to_bf16(in[i]);
}

ask_split bf16_ask_split(uint32_t hd) {
  ask_split split;  // the default where neither vector width takes hd
  if (!bf16_ask_split_avx512(hd, split)) bf16_ask_split_avx2(hd, split);
  return split;
}

DUALPATH_MULTIVERSION
void bf16_scores(const float* qg, uint32_t kv_heads, uint64_t rq, uint32_t hd, const std::byte* base, uint32_t tokens,
                 uint64_t stride, uint64_t off, float scale, float* s, uint64_t ctx, uint64_t j0, rows_ahead ahead) {
  if (bf16_scores_avx512(qg, kv_heads, rq, hd, base, tokens, stride, off, scale, s, ctx, j0, ahead)) return;
  if (bf16_scores_avx2(qg, kv_heads, rq, hd, base, tokens, stride, off, scale, s, ctx, j0, ahead)) return;
  float k[8192];
  const uint32_t width = kv_heads * hd;
  const uint64_t pairs = kv_heads * rq;  // (KV head, query row) dot products per token
  for (uint32_t t = 0; t < tokens; ++t) {
    if (t + prefetch_ahead < tokens) prefetch_row(base + (t + prefetch_ahead) * stride, off, width);
    widen_bf16_row(base + t * stride, off, width, k);
    uint64_t p = 0;
    // Eight dot products at a time, summed across lanes together (one horizontal sum each costs as much as
    // the dot product of a 64-wide head).
    for (; hd % 8 == 0 && p + 8 <= pairs; p += 8) {
      v8f acc[8] = {};
      for (uint32_t d = 0; d < hd; d += 8)
        for (int i = 0; i < 8; ++i) {
          v8f q, kv;
          std::memcpy(&q, qg + (p + i) * hd + d, sizeof q);
          std::memcpy(&kv, k + ((p + i) / rq) * hd + d, sizeof kv);
          acc[i] += q * kv;
        }
      const v8f dots = sum_lanes8(acc) * scale;
      for (int i = 0; i < 8; ++i) s[(p + i) * ctx + j0 + t] = dots[i];
    }
    for (; p < pairs; ++p) {
      const float* q = qg + p * hd;
      const float* kg = k + (p / rq) * hd;
      float dot = 0;
#pragma omp simd reduction(+ : dot)
      for (uint32_t d = 0; d < hd; ++d) dot += q[d] * kg[d];
      s[p * ctx + j0 + t] = dot * scale;
    }
  }
}

DUALPATH_MULTIVERSION
void bf16_weighted_values(const float* s, uint32_t kv_heads, uint64_t rq, uint64_t ctx, uint64_t j0,
                          const std::byte* base, uint32_t tokens, uint64_t stride, uint64_t off, uint32_t hd, float* og,
                          rows_ahead ahead) {
  if (bf16_weighted_values_avx512(s, kv_heads, rq, ctx, j0, base, tokens, stride, off, hd, og, ahead)) return;
  if (bf16_weighted_values_avx2(s, kv_heads, rq, ctx, j0, base, tokens, stride, off, hd, og, ahead)) return;
  float v[8192];
  const uint32_t width = kv_heads * hd;
  for (uint32_t t = 0; t < tokens; ++t) {
    if (t + prefetch_ahead < tokens) prefetch_row(base + (t + prefetch_ahead) * stride, off, width);
    widen_bf16_row(base + t * stride, off, width, v);
    for (uint32_t g = 0; g < kv_heads; ++g)
      for (uint64_t row = 0; row < rq; ++row) {
        const float p = s[(g * rq + row) * ctx + j0 + t];
        const float* vg = v + g * hd;
        float* o = og + (g * rq + row) * hd;
        for (uint32_t d = 0; d < hd; ++d) o[d] += p * vg[d];
      }
  }
}

}  // namespace dualpath::gpu::cpu
