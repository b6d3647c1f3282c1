#include <cblas.h>
#include <doctest/doctest.h>

#include <cstring>
#include <list>
#include <random>
#include <string>
#include <vector>

#include "gpu/cpu_skinny_gemm.hpp"

using dualpath::gpu::cpu::skinny_gemm;

namespace {

bool kernel_expected() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

// OpenBLAS cores whose sgemm order the kernel is known to reproduce (checked on them); elsewhere it may fall
// back to sgemm, and the test then only holds it to what it covers.
bool known_core() {
  const std::string core = openblas_get_corename();
  return core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids";
}

std::vector<float> random_values(uint64_t n, uint32_t seed, float scale) {
  std::mt19937 rng{seed};
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

}  // namespace

TEST_CASE("the skinny GEMM reproduces sgemm on many rows bit for bit, for every row count and beta") {
  if (!kernel_expected()) return;  // such a CPU keeps sgemm; the backend tests cover that path
  const std::string core = openblas_get_corename();
  MESSAGE("OpenBLAS core: ", core);
  // The cpu backend's inner dimensions (tiny, small, a Qwen2-0.5B-like 896 and 4864), several over one of
  // sgemm's K blocks.
  const std::vector<uint64_t> dims{128, 512, 896, 1536, 4864};
  // The widest kernel this CPU runs, and the AVX2 one (8 lanes) where that is a different one.
  for (uint64_t lanes : {0, 8}) {
    const skinny_gemm gemm(dims, lanes);
    std::list<std::vector<float>> weights;
    CAPTURE(gemm.lanes());
    CHECK((gemm.lanes() == 8 || gemm.lanes() == 16));
    constexpr uint64_t many = 512, out = 200;  // out not a multiple of the kernel's 8 or 16 outputs
    for (uint64_t in : dims) {
      CAPTURE(in);
      if (gemm.blocks(in).empty()) {  // no blocking reproduced sgemm here: every product stays on sgemm
        CHECK_FALSE(known_core());
        CHECK_FALSE(gemm.covers(8, in));
        continue;
      }
      CHECK(gemm.blocks(in).back() == in);
      const auto x = random_values(many * in, 7, 1.0f), w = random_values(out * in, 8, 0.05f),
                 y0 = random_values(many * out, 9, 1.0f);
      const auto& pw = gemm.packed(w.data(), out, in);
      CHECK(&gemm.packed(w.data(), out, in) == &pw);  // laid out once per weight matrix
      for (float beta : {0.0f, 1.0f}) {
        std::vector<float> ref = y0;  // sgemm over 512 rows, as a full recompute runs it
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(many), int(out), int(in), 1.0f, x.data(), int(in),
                    w.data(), int(in), beta, ref.data(), int(out));
        for (uint64_t rows : {1, 2, 3, 5, 8, 13, 16}) {
          CAPTURE(rows);
          CAPTURE(beta);
          REQUIRE(gemm.covers(rows, in));
          const uint64_t first = 100;  // rows [100, 100 + rows) of the big product
          std::vector<float> y(y0.begin() + first * out, y0.begin() + (first + rows) * out);
          // Three column ranges, as the team would split them: one of a single 16-wide block, one ending
          // inside a block (out).
          gemm.multiply(&x[first * in], rows, pw, 0, 16, beta, y.data());
          gemm.multiply(&x[first * in], rows, pw, 16, 96, beta, y.data());
          gemm.multiply(&x[first * in], rows, pw, 96, out, beta, y.data());
          uint64_t differ = 0;
          for (uint64_t i = 0; i < rows * out; ++i) differ += std::memcmp(&y[i], &ref[first * out + i], 4) != 0;
          CHECK(differ == 0);
        }
      }
    }
  }
}

TEST_CASE("the skinny GEMM leaves what it does not cover to sgemm") {
  const skinny_gemm gemm({512});
  CHECK_FALSE(gemm.covers(skinny_gemm::max_rows + 1, 512));
  CHECK_FALSE(gemm.covers(0, 512));
  CHECK_FALSE(gemm.covers(8, 640));  // not calibrated
  CHECK(gemm.blocks(640).empty());
  CHECK(gemm.covers(8, 512) == !gemm.blocks(512).empty());
  if (known_core()) CHECK(gemm.covers(8, 512) == kernel_expected());
}
