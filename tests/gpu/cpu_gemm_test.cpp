#include <cblas.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "gpu/bf16.hpp"
#include "gpu/cpu_gemm.hpp"

using dualpath::gpu::cpu::gemm;

namespace {

std::vector<float> random_values(uint64_t n, uint32_t seed, float scale) {
  std::mt19937 rng{seed};
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

// The order cpu_gemm.hpp promises, one output at a time in scalar code: a fused multiply-add chain from zero
// per block of k_block inputs, each block's sum added to the output in block order.
float reference(const float* x, const float* w, uint64_t in, float start) {
  float total = start;
  for (uint64_t k0 = 0; k0 < in; k0 += gemm::k_block) {
    float acc = 0.0f;
    for (uint64_t k = k0; k < std::min(in, k0 + gemm::k_block); ++k) acc = std::fma(x[k], w[k], acc);
    total += acc;
  }
  return total;
}

// The kernels this CPU runs: the widest, and the AVX2 one where that is a different one (none without either).
std::vector<gemm> kernels() {
  std::vector<gemm> out;
  const gemm widest;
  if (widest.lanes() == 0) return out;
  out.push_back(widest);
  if (widest.lanes() != 8) out.emplace_back(8);
  return out;
}

}  // namespace

TEST_CASE("the cpu GEMM sums in its one order, whatever the rows, the columns and beta") {
  const auto ks = kernels();
  if (ks.empty()) return;  // no AVX2 and FMA: every product runs sgemm
  // The backend's inner dimensions (tiny, small, a Qwen2-0.5B-like 896) and one past a block boundary that no
  // vector width divides; 200 outputs, not a multiple of either kernel's 8 or 16.
  constexpr uint64_t out = 200, many = 40;
  for (const gemm& g : ks) {
    CAPTURE(g.lanes());
    for (uint64_t in : {128, 512, 896, 1539}) {
      CAPTURE(in);
      const auto x = random_values(many * in, 7, 1.0f), wv = random_values(out * in, 8, 0.05f),
                 y0 = random_values(many * out, 9, 1.0f);
      const gemm::weights w = g.prepare(wv, out, in);
      CHECK(w.packed);
      for (float beta : {0.0f, 1.0f})
        for (uint64_t rows : {1, 2, 3, 5, 6, 7, 8, 13, 14, 15, 16, 17, 29, 40}) {
          CAPTURE(rows);
          CAPTURE(beta);
          std::vector<float> y(y0.begin(), y0.begin() + rows * out);
          // Three column ranges, as the team would split them: one of a single 16-wide block, one ending inside a
          // block (out).
          g.multiply(x.data(), rows, w, 0, 16, beta, y.data());
          g.multiply(x.data(), rows, w, 16, 96, beta, y.data());
          g.multiply(x.data(), rows, w, 96, out, beta, y.data());
          uint64_t differ = 0;
          for (uint64_t r = 0; r < rows; ++r)
            for (uint64_t c = 0; c < out; ++c) {
              const float want = reference(&x[r * in], &wv[c * in], in, beta != 0.0f ? y0[r * out + c] : 0.0f);
              differ += std::memcmp(&y[r * out + c], &want, 4) != 0;
            }
          CHECK(differ == 0);
        }
    }
  }
}

TEST_CASE("a row's product does not depend on its batch: a decode step's rows equal a recompute's") {
  const auto ks = kernels();
  if (ks.empty()) return;
  constexpr uint64_t in = 512, out = 96, many = 300;
  const auto x = random_values(many * in, 11, 1.0f), wv = random_values(out * in, 12, 0.05f);
  for (const gemm& g : ks) {
    CAPTURE(g.lanes());
    const gemm::weights w = g.prepare(wv, out, in);
    std::vector<float> all(many * out);  // a full recompute: every row in one call
    g.multiply(x.data(), many, w, 0, out, 0.0f, all.data());
    for (uint64_t first : {0, 1, 7, 100, 293})
      for (uint64_t rows : {1, 3, 7}) {
        CAPTURE(first);
        CAPTURE(rows);
        std::vector<float> few(rows * out);  // the same rows as a decode step of `rows` requests
        g.multiply(&x[first * in], rows, w, 0, out, 0.0f, few.data());
        CHECK(std::memcmp(few.data(), &all[first * out], few.size() * 4) == 0);
      }
    // And it is the product: within fp32 rounding of sgemm's.
    std::vector<float> ref(many * out);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(many), int(out), int(in), 1.0f, x.data(), int(in),
                wv.data(), int(in), 0.0f, ref.data(), int(out));
    double worst = 0;
    for (uint64_t i = 0; i < ref.size(); ++i) worst = std::max(worst, double(std::fabs(all[i] - ref[i])));
    CHECK(worst < 1e-4);  // outputs of about unit size, 512 products each
  }
}

TEST_CASE("weights that are all bf16 values stay in bf16, and their products are the fp32 form's to the bit") {
  const auto ks = kernels();
  if (ks.empty()) return;
  constexpr uint64_t out = 200, many = 40;
  for (const gemm& g : ks) {
    CAPTURE(g.lanes());
    for (uint64_t in : {512, 1539}) {
      CAPTURE(in);
      auto wv = random_values(out * in, 21, 0.05f);
      for (auto& v : wv) v = dualpath::gpu::round_bf16(v);
      const auto x = random_values(many * in, 22, 1.0f), y0 = random_values(many * out, 23, 1.0f);
      const gemm::weights half = g.prepare(wv, out, in), full = g.prepare(wv, out, in, false);
      REQUIRE(half.bf16());
      CHECK(half.data.empty());
      CHECK_FALSE(full.bf16());
      CHECK(2 * half.bytes() == full.bytes());  // half the bytes a decode step streams
      auto nudged = wv;
      nudged[out * in / 2] = std::nextafter(nudged[out * in / 2], 1.0f);  // one weight that no bf16 holds
      CHECK_FALSE(g.prepare(nudged, out, in).bf16());
      // A few rows widen as they load (one sweep), many widen each panel once (beyond 14 rows on either kernel).
      for (float beta : {0.0f, 1.0f})
        for (uint64_t rows : {1, 2, 3, 7, 8, 9, 15, 40}) {
          CAPTURE(rows);
          CAPTURE(beta);
          std::vector<float> a(y0.begin(), y0.begin() + rows * out), b = a;
          for (const auto& [c0, c1] : {std::pair<uint64_t, uint64_t>{0, 16}, {16, 96}, {96, out}}) {
            g.multiply(x.data(), rows, half, c0, c1, beta, a.data());
            g.multiply(x.data(), rows, full, c0, c1, beta, b.data());
          }
          CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
          const float want = reference(&x[(rows - 1) * in], &wv[(out - 1) * in], in,
                                       beta != 0.0f ? y0[(rows - 1) * out + out - 1] : 0.0f);
          CHECK(std::memcmp(&a[(rows - 1) * out + out - 1], &want, 4) == 0);
        }
    }
  }
}

TEST_CASE("without a kernel the weights stay as they are, for sgemm") {
  const gemm g;
  const auto wv = random_values(32 * 64, 3, 1.0f);
  const gemm::weights w = g.prepare(wv, 32, 64);
  CHECK(w.out == 32);
  CHECK(w.in == 64);
  if (g.lanes() == 0) {
    CHECK_FALSE(w.packed);
    CHECK(std::equal(w.data.begin(), w.data.end(), wv.begin(), wv.end()));
  } else {
    CHECK(w.packed);
    CHECK(w.data.size() == 32 * 64);  // 32 outputs: whole vector blocks, no padding
    CHECK(w.data[1] == wv[64]);       // k 0 of output 1 beside k 0 of output 0
  }
  CHECK_THROWS_AS(g.prepare(wv, 32, 63), std::invalid_argument);  // not the shape it claims
}
