#include "gpu/cpu_skinny_gemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>

#if defined(__x86_64__)
#include <immintrin.h>
#define DUALPATH_SKINNY_TARGET __attribute__((target("avx2,fma")))
#endif

namespace dualpath::gpu::cpu {

namespace {

constexpr uint64_t lanes = 8;

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

#if defined(__x86_64__)
bool cpu_has_kernel() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

// J outputs [o, o + J) of G row groups: per K block, a fused multiply-add chain from zero for each (row,
// output), its sum then added to the output (sgemm's order, so every bit matches).
// With `next`, the J weight rows after these are asked for a line ahead of their use (measured: 4% more
// bandwidth from DRAM than leaving each new set of rows to the hardware prefetcher).
template <int G, int J>
DUALPATH_SKINNY_TARGET void outputs(const float* xt, uint64_t rows, uint64_t in, const float* w, uint64_t out,
                                    uint64_t o, float beta, const std::vector<uint32_t>& kb, float* y, bool next) {
  __m256 total[G][J];
  alignas(32) float tmp[lanes];
  for (int g = 0; g < G; ++g)
    for (int j = 0; j < J; ++j) {
      for (uint64_t l = 0; l < lanes; ++l) {
        const uint64_t r = g * lanes + l;
        tmp[l] = r < rows && beta != 0.0f ? y[r * out + o + j] : 0.0f;
      }
      total[g][j] = _mm256_load_ps(tmp);
    }
  const float* wo = w + o * in;
  for (size_t b = 0; b + 1 < kb.size(); ++b) {
    __m256 acc[G][J];
    for (int g = 0; g < G; ++g)
      for (int j = 0; j < J; ++j) acc[g][j] = _mm256_setzero_ps();
    for (uint64_t k = kb[b]; k < kb[b + 1]; ++k) {
      if (next && k % 16 == 0)
        for (int j = 0; j < J; ++j) __builtin_prefetch(wo + (J + j) * in + k);
      __m256 xv[G];
      for (int g = 0; g < G; ++g) xv[g] = _mm256_loadu_ps(xt + (g * in + k) * lanes);
      for (int j = 0; j < J; ++j) {
        const __m256 wv = _mm256_broadcast_ss(wo + j * in + k);
        for (int g = 0; g < G; ++g) acc[g][j] = _mm256_fmadd_ps(xv[g], wv, acc[g][j]);
      }
    }
    for (int g = 0; g < G; ++g)
      for (int j = 0; j < J; ++j) total[g][j] = _mm256_add_ps(acc[g][j], total[g][j]);
  }
  for (int g = 0; g < G; ++g)
    for (int j = 0; j < J; ++j) {
      _mm256_store_ps(tmp, total[g][j]);
      for (uint64_t l = 0; l < lanes && g * lanes + l < rows; ++l) y[(g * lanes + l) * out + o + j] = tmp[l];
    }
}

// Eight accumulator chains in flight (an FMA's latency times its two ports), whatever the row groups.
template <int G>
DUALPATH_SKINNY_TARGET void columns(const float* xt, uint64_t rows, uint64_t in, const float* w, uint64_t out,
                                    uint64_t c0, uint64_t c1, float beta, const std::vector<uint32_t>& kb, float* y) {
  constexpr int J = 8 / G;
  uint64_t o = c0;
  for (; o + J <= c1; o += J) outputs<G, J>(xt, rows, in, w, out, o, beta, kb, y, o + 2 * J <= c1);
  for (; o < c1; ++o) outputs<G, 1>(xt, rows, in, w, out, o, beta, kb, y, false);
}
#else
bool cpu_has_kernel() { return false; }
#endif

void run(const skinny_gemm::packed_rows& x, const float* w, uint64_t out, uint64_t c0, uint64_t c1, float beta,
         const std::vector<uint32_t>& kb, float* y) {
#if defined(__x86_64__)
  if (x.rows <= lanes) columns<1>(x.lanes.data(), x.rows, x.in, w, out, c0, c1, beta, kb, y);
  else columns<2>(x.lanes.data(), x.rows, x.in, w, out, c0, c1, beta, kb, y);
#else
  (void)x, (void)w, (void)out, (void)c0, (void)c1, (void)beta, (void)kb, (void)y;
#endif
}

// The blocking under which this kernel reproduces sgemm on `in`-deep products, or empty. Candidates are
// searched on 8 rows × 16 columns and the one found is confirmed on 16 × 64.
std::vector<uint32_t> calibrate(uint64_t in) {
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
  // The first max_rows rows, packed once; the search uses the first group of them.
  skinny_gemm::packed_rows all, first;
  skinny_gemm::pack(x.data(), skinny_gemm::max_rows, in, all);
  skinny_gemm::pack(x.data(), lanes, in, first);
  auto matches = [&](const std::vector<uint32_t>& kb, const skinny_gemm::packed_rows& px, uint64_t ncols) {
    std::vector<float> y(y0.begin(), y0.begin() + px.rows * cols);
    run(px, w.data(), cols, 0, ncols, 1.0f, kb, y.data());
    for (uint64_t r = 0; r < px.rows; ++r)
      if (std::memcmp(&y[r * cols], &ref[r * cols], ncols * sizeof(float)) != 0) return false;
    return true;
  };
  std::set<std::vector<uint32_t>> tried;
  for (uint64_t q = 16; q <= 4096; q += 16)
    for (uint64_t unroll : {1, 2, 4, 8, 16, 32, 64}) {
      auto kb = blocking(in, q, unroll);
      if (!tried.insert(kb).second) continue;
      if (matches(kb, first, 16) && matches(kb, all, cols)) return kb;
    }
  return {};
}

}  // namespace

skinny_gemm::skinny_gemm(const std::vector<uint64_t>& inner_dims) {
  const bool usable = cpu_has_kernel();
  for (uint64_t in : inner_dims)
    if (!blocks_.count(in)) blocks_[in] = usable && in > 0 ? calibrate(in) : std::vector<uint32_t>{};
}

bool skinny_gemm::covers(uint64_t rows, uint64_t in) const {
  auto it = blocks_.find(in);
  return rows > 0 && rows <= max_rows && it != blocks_.end() && !it->second.empty();
}

std::vector<uint32_t> skinny_gemm::blocks(uint64_t in) const {
  auto it = blocks_.find(in);
  return it == blocks_.end() ? std::vector<uint32_t>{} : it->second;
}

void skinny_gemm::pack(const float* x, uint64_t rows, uint64_t in, packed_rows& out) {
  const uint64_t groups = (rows + lanes - 1) / lanes;
  out.rows = rows;
  out.in = in;
  out.lanes.assign(groups * in * lanes, 0.0f);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t k = 0; k < in; ++k) out.lanes[((r / lanes) * in + k) * lanes + r % lanes] = x[r * in + k];
}

void skinny_gemm::multiply(const packed_rows& x, const float* w, uint64_t out, uint64_t c0, uint64_t c1, float beta,
                           float* y) const {
  run(x, w, out, c0, c1, beta, blocks_.at(x.in), y);
}

}  // namespace dualpath::gpu::cpu
