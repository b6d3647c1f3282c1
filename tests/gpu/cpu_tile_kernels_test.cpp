#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gpu/cpu_tile_avx512.hpp"

namespace cpu = dualpath::gpu::cpu;

namespace {

std::vector<float> random_floats(uint64_t n, uint32_t seed) {
  std::mt19937 rng{seed};
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

}  // namespace

TEST_CASE("the prefill tile kernels agree with a double-precision sum, on every head width") {
  for (uint32_t hd : {32u, 64u, 128u}) {
    CAPTURE(hd);
    if (!cpu::tile_kernels_usable(hd)) {
      MESSAGE("no AVX-512 here: the tile kernels are not built for this CPU");
      return;
    }
    constexpr uint64_t rows = 2 * cpu::tile_rows, keys = 3 * cpu::tile_keys, stride = keys + 5;
    const auto q = random_floats(rows * hd, 1), k = random_floats(keys * hd, 2), v = random_floats(keys * hd, 3),
               p = random_floats(rows * stride, 4), o0 = random_floats(rows * hd, 5);
    // The keys in the kernels' layout: groups of [dimension][tile_keys].
    std::vector<float> kt(keys * hd);
    for (uint64_t j = 0; j < keys; ++j)
      for (uint64_t d = 0; d < hd; ++d)
        kt[(j / cpu::tile_keys * hd + d) * cpu::tile_keys + j % cpu::tile_keys] = k[j * hd + d];
    std::vector<float> s(rows * stride, -7.0f);
    cpu::tile_scores_avx512(q.data(), rows, hd, kt.data(), keys, s.data(), stride);
    double worst = 0;
    for (uint64_t r = 0; r < rows; ++r) {
      for (uint64_t j = 0; j < keys; ++j) {
        double want = 0;
        for (uint64_t d = 0; d < hd; ++d) want += double(q[r * hd + d]) * k[j * hd + d];
        worst = std::max(worst, std::abs(want - s[r * stride + j]));
      }
      for (uint64_t j = keys; j < stride; ++j) CHECK(s[r * stride + j] == -7.0f);  // past `keys`: untouched
    }
    CHECK(worst < 1e-4);

    // Values over a key count that is no multiple of the kernel's chunk, rows hd apart.
    const uint64_t some = keys - 3;
    std::vector<float> o = o0;
    cpu::tile_values_avx512(p.data(), stride, rows, some, v.data(), hd, hd, o.data());
    worst = 0;
    for (uint64_t r = 0; r < rows; ++r)
      for (uint64_t d = 0; d < hd; ++d) {
        double want = o0[r * hd + d];
        for (uint64_t j = 0; j < some; ++j) want += double(p[r * stride + j]) * v[j * hd + d];
        worst = std::max(worst, std::abs(want - o[r * hd + d]));
      }
    CHECK(worst < 1e-4);
  }
}
