#include "gpu/cpu_gemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "gpu/bf16.hpp"
#include "gpu/cpu_simd.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dualpath::gpu::cpu {

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
namespace avx512 {
using vec = __m512;
constexpr uint64_t L = 16;
constexpr int registers = 32;
inline vec vzero() { return _mm512_setzero_ps(); }
inline vec vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, vec v) { _mm512_storeu_ps(p, v); }
inline vec vset1(float f) { return _mm512_set1_ps(f); }
inline vec vfma(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
inline vec vadd(vec a, vec b) { return _mm512_add_ps(a, b); }
inline vec vloadw(const float* p) { return vload(p); }
inline vec vloadw(const uint16_t* p) {  // bf16 is the high half of an fp32
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  // The zero-masked forms: the plain ones start from an "undefined" vector that GCC 12 warns about.
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, _mm512_maskz_cvtepu16_epi32(0xFFFF, h), 16));
}
#include "gpu/cpu_gemm_kernel.inc"
}  // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
using vec = __m256;
constexpr uint64_t L = 8;
constexpr int registers = 16;
inline vec vzero() { return _mm256_setzero_ps(); }
inline vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, vec v) { _mm256_storeu_ps(p, v); }
inline vec vset1(float f) { return _mm256_set1_ps(f); }
inline vec vfma(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
inline vec vadd(vec a, vec b) { return _mm256_add_ps(a, b); }
inline vec vloadw(const float* p) { return vload(p); }
inline vec vloadw(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
#include "gpu/cpu_gemm_kernel.inc"
}  // namespace avx2
#pragma GCC pop_options

namespace {
uint64_t kernel_lanes() {
  if (has_avx512f()) return avx512::L;
  if (has_avx2_fma()) return avx2::L;
  return 0;
}
}  // namespace
#else
namespace {
uint64_t kernel_lanes() { return 0; }
}  // namespace
#endif

namespace {

// Columns of weights a thread takes through every row of a call before the next: about 512 KB of them, so
// they stay in L2 while each block of rows passes (at least one vector block of 16).
uint64_t panel_columns(uint64_t in) { return std::max<uint64_t>(16, (uint64_t(512) << 10) / (in * 4) / 16 * 16); }

void run(uint64_t lanes, const float* x, uint64_t rows, const gemm::weights& w, uint64_t c0, uint64_t c1, float beta,
         float* y) {
#if defined(__x86_64__)
  const auto with = [&](const auto* weights) {  // the packed weights in either form
    if (lanes == avx512::L) return avx512::run(x, rows, weights, w.out, w.in, c0, c1, beta, y);
    if (lanes == avx2::L) return avx2::run(x, rows, weights, w.out, w.in, c0, c1, beta, y);
  };
  if (w.bf16()) return with(w.half.data());
  return with(w.data.data());
#endif
  (void)lanes, (void)x, (void)rows, (void)w, (void)c0, (void)c1, (void)beta, (void)y;
}

}  // namespace

gemm::gemm(uint64_t lanes) : lanes_(lanes == 0 || lanes > kernel_lanes() ? kernel_lanes() : lanes) {}

gemm::weights gemm::prepare(std::vector<float> w, uint64_t out, uint64_t in, bool allow_bf16) const {
  if (w.size() != out * in)
    throw std::invalid_argument("weight matrix of " + std::to_string(w.size()) + " values, expected " +
                                std::to_string(out) + " x " + std::to_string(in));
  weights p;
  p.out = out;
  p.in = in;
  if (lanes_ == 0) {
    p.data.assign(w.begin(), w.end());
    return p;
  }
  const uint64_t L = lanes_, blocks = (out + L - 1) / L;
  p.packed = true;
  // [out / L blocks][in][L], each weight as `as` makes it.
  const auto pack = [&](auto& dst, auto as) {
    dst.assign(blocks * in * L, 0);
    for (uint64_t o = 0; o < out; ++o)
      for (uint64_t k = 0; k < in; ++k) dst[((o / L) * in + k) * L + o % L] = as(w[o * in + k]);
  };
  if (allow_bf16 && std::all_of(w.begin(), w.end(), [](float f) { return (bits_of(f) & 0xffffu) == 0; }))
    pack(p.half, [](float f) { return uint16_t(bits_of(f) >> 16); });
  else pack(p.data, [](float f) { return f; });
  return p;
}

void gemm::multiply(const float* x, uint64_t rows, const weights& w, uint64_t c0, uint64_t c1, float beta,
                    float* y) const {
  if (rows == 0 || c0 >= c1) return;
  if (!w.packed) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(rows), int(c1 - c0), int(w.in), 1.0f, x, int(w.in),
                w.data.data() + c0 * w.in, int(w.in), beta, y + c0, int(w.out));
    return;
  }
  // A panel of weights at a time, every row through it (the kernel takes them its own number of rows a call).
  const uint64_t panel = panel_columns(w.in);
  for (uint64_t p0 = c0; p0 < c1; p0 += panel) run(lanes_, x, rows, w, p0, std::min(c1, p0 + panel), beta, y);
}

}  // namespace dualpath::gpu::cpu
