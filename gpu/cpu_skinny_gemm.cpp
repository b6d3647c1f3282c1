#include "gpu/cpu_skinny_gemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dualpath::gpu::cpu {

namespace {

// sgemm's K blocks for inner dimension k when its block depth is q and a split remainder is rounded up to
// `unroll`: whole q blocks while at least two are left, then the rest in two near-halves (or one block).
std::vector<uint32_t> blocking(uint64_t k, uint64_t q, uint64_t unroll) {
  std::vector<uint32_t> b{0};
  for (uint64_t done = 0; done < k;) {
    uint64_t step = k - done;
    if (step >= 2 * q) step = q;
    else if (step > q) step = (step / 2 + unroll - 1) / unroll * unroll;
    done += step;
    b.push_back(uint32_t(done));
  }
  return b;
}

}  // namespace

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
namespace avx512 {
using vec = __m512;
constexpr uint64_t L = 16;
inline vec vzero() { return _mm512_setzero_ps(); }
inline vec vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, vec v) { _mm512_storeu_ps(p, v); }
inline vec vset1(float f) { return _mm512_set1_ps(f); }
inline vec vfma(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
inline vec vadd(vec a, vec b) { return _mm512_add_ps(a, b); }
#include "gpu/cpu_skinny_kernel.inc"
}  // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
using vec = __m256;
constexpr uint64_t L = 8;
inline vec vzero() { return _mm256_setzero_ps(); }
inline vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, vec v) { _mm256_storeu_ps(p, v); }
inline vec vset1(float f) { return _mm256_set1_ps(f); }
inline vec vfma(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
inline vec vadd(vec a, vec b) { return _mm256_add_ps(a, b); }
#include "gpu/cpu_skinny_kernel.inc"
}  // namespace avx2
#pragma GCC pop_options

namespace {
uint64_t kernel_lanes() {
  if (__builtin_cpu_supports("avx512f")) return avx512::L;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return avx2::L;
  return 0;
}
}  // namespace
#else
namespace {
uint64_t kernel_lanes() { return 0; }
}  // namespace
#endif

namespace {

void run(uint64_t lanes, const float* x, uint64_t rows, const skinny_gemm::packed_weights& w, uint64_t c0, uint64_t c1,
         float beta, const std::vector<uint32_t>& kb, float* y) {
#if defined(__x86_64__)
  if (lanes == avx512::L) return avx512::run(x, rows, w.data.data(), w.out, w.in, c0, c1, beta, kb, y);
  if (lanes == avx2::L) return avx2::run(x, rows, w.data.data(), w.out, w.in, c0, c1, beta, kb, y);
#endif
  (void)lanes, (void)x, (void)rows, (void)w, (void)c0, (void)c1, (void)beta, (void)kb, (void)y;
}

// The blocking under which this kernel reproduces sgemm on `in`-deep products, or empty. Candidates are
// searched on 8 rows × 16 columns and the one found is confirmed on 16 × 64.
std::vector<uint32_t> calibrate(const skinny_gemm& g, uint64_t in) {
  constexpr uint64_t ref_rows = 512, cols = 64;  // enough rows that sgemm takes its packed path
  std::mt19937 rng{uint32_t(in)};
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(ref_rows * in), w(cols * in), y0(ref_rows * cols);
  for (auto& v : x) v = normal(rng);
  for (auto& v : w) v = normal(rng) * 0.05f;
  for (auto& v : y0) v = normal(rng);
  std::vector<float> ref = y0;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(ref_rows), int(cols), int(in), 1.0f, x.data(), int(in),
              w.data(), int(in), 1.0f, ref.data(), int(cols));
  skinny_gemm::packed_weights pw;
  g.pack(w.data(), cols, in, pw);
  auto matches = [&](const std::vector<uint32_t>& kb, uint64_t rows, uint64_t ncols) {
    std::vector<float> y(y0.begin(), y0.begin() + rows * cols);
    run(g.lanes(), x.data(), rows, pw, 0, ncols, 1.0f, kb, y.data());
    for (uint64_t r = 0; r < rows; ++r)
      if (std::memcmp(&y[r * cols], &ref[r * cols], ncols * sizeof(float)) != 0) return false;
    return true;
  };
  std::set<std::vector<uint32_t>> tried;
  for (uint64_t q = 16; q <= 4096; q += 16)
    for (uint64_t unroll : {1, 2, 4, 8, 16, 32, 64}) {
      auto kb = blocking(in, q, unroll);
      if (!tried.insert(kb).second) continue;
      if (matches(kb, 8, 16) && matches(kb, skinny_gemm::max_rows, cols)) return kb;
    }
  return {};
}

}  // namespace

skinny_gemm::skinny_gemm(const std::vector<uint64_t>& inner_dims, uint64_t lanes)
    : lanes_(lanes == 0 || lanes > kernel_lanes() ? kernel_lanes() : lanes) {
  for (uint64_t in : inner_dims)
    if (!blocks_.count(in)) blocks_[in] = lanes_ > 0 && in > 0 ? calibrate(*this, in) : std::vector<uint32_t>{};
}

bool skinny_gemm::covers(uint64_t rows, uint64_t in) const {
  auto it = blocks_.find(in);
  return rows > 0 && rows <= max_rows && it != blocks_.end() && !it->second.empty();
}

std::vector<uint32_t> skinny_gemm::blocks(uint64_t in) const {
  auto it = blocks_.find(in);
  return it == blocks_.end() ? std::vector<uint32_t>{} : it->second;
}

void skinny_gemm::pack(const float* w, uint64_t out, uint64_t in, packed_weights& p) const {
  const uint64_t L = std::max<uint64_t>(lanes_, 1), blocks = (out + L - 1) / L;
  p.out = out;
  p.in = in;
  p.data.assign(blocks * in * L, 0.0f);
  for (uint64_t o = 0; o < out; ++o)
    for (uint64_t k = 0; k < in; ++k) p.data[((o / L) * in + k) * L + o % L] = w[o * in + k];
}

const skinny_gemm::packed_weights& skinny_gemm::packed(const float* w, uint64_t out, uint64_t in) const {
  std::lock_guard lock(packed_mu_);
  auto& p = packed_[{w, out, in}];
  if (!p) {
    p = std::make_unique<packed_weights>();
    pack(w, out, in, *p);
  }
  return *p;
}

void skinny_gemm::multiply(const float* x, uint64_t rows, const packed_weights& w, uint64_t c0, uint64_t c1, float beta,
                           float* y) const {
  run(lanes_, x, rows, w, c0, c1, beta, blocks_.at(w.in), y);
}

}  // namespace dualpath::gpu::cpu
