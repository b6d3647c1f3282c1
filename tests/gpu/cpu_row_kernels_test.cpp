#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gpu/cpu_kernels.hpp"

namespace cpu = dualpath::gpu::cpu;

TEST_CASE("silu_mul matches silu(g)·u over the whole range of gates, vector lanes and tail alike") {
  const uint32_t inter = 37;  // two sixteen-lane blocks and a tail of five
  const uint64_t rows = 3;
  std::mt19937 rng{3};
  std::uniform_real_distribution<float> gate(-100.0f, 100.0f), up(-2.0f, 2.0f);
  std::vector<float> gu(rows * 2 * inter), out(rows * inter);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < inter; ++i) {
      // Small gates too, where the two forms of the formula meet.
      gu[r * 2 * inter + i] = i % 3 == 0 ? gate(rng) / 1000.0f : gate(rng);
      gu[r * 2 * inter + inter + i] = up(rng);
    }
  gu[5] = 0.0f;
  gu[6] = -0.0f;
  cpu::silu_mul(gu.data(), out.data(), rows, inter);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < inter; ++i) {
      const double g = gu[r * 2 * inter + i], u = gu[r * 2 * inter + inter + i];
      const double want = g / (1.0 + std::exp(-g)) * u;
      CAPTURE(g);
      CHECK(std::abs(out[r * inter + i] - want) <= 1e-6 * std::abs(want) + 1e-30);
    }
}

TEST_CASE("online_exp over blocks gives the softmax of the whole row") {
  const uint64_t rows = 4, cols = 53, blocks = 3;  // 53: sixteen-lane blocks and a tail
  std::mt19937 rng{4};
  std::uniform_real_distribution<float> score(-30.0f, 30.0f);
  std::vector<float> all(rows * cols * blocks);
  for (auto& x : all) x = score(rng);
  // Row r sees its first valid[r] columns of the whole row (a causal mask), one of them none of block 2.
  const std::vector<uint32_t> valid{uint32_t(cols * blocks), 70, uint32_t(cols * 2), 1};
  std::vector<float> max(rows, -INFINITY), sum(rows, 0.0f), rescale(rows), weighted(rows, 0.0f);
  std::vector<uint32_t> block_valid(rows);
  for (uint64_t b = 0; b < blocks; ++b) {
    std::vector<float> s(rows * cols);
    for (uint64_t r = 0; r < rows; ++r) {
      for (uint64_t j = 0; j < cols; ++j) s[r * cols + j] = all[(r * blocks + b) * cols + j];
      block_valid[r] = valid[r] > b * cols ? uint32_t(valid[r] - b * cols) : 0;
    }
    cpu::online_exp(s.data(), rows, cols, block_valid.data(), max.data(), sum.data(), rescale.data());
    // Weights of column index + 1, as attention weights its values.
    for (uint64_t r = 0; r < rows; ++r) {
      weighted[r] *= rescale[r];
      for (uint64_t j = 0; j < cols; ++j) {
        if (j >= block_valid[r]) CHECK(s[r * cols + j] == 0.0f);
        weighted[r] += s[r * cols + j] * float(b * cols + j + 1);
      }
    }
  }
  for (uint64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY, z = 0, w = 0;
    for (uint64_t k = 0; k < valid[r]; ++k) mx = std::max<double>(mx, all[(r * blocks + k / cols) * cols + k % cols]);
    for (uint64_t k = 0; k < valid[r]; ++k) {
      const double e = std::exp(double(all[(r * blocks + k / cols) * cols + k % cols]) - mx);
      z += e;
      w += e * double(k + 1);
    }
    CAPTURE(r);
    CHECK(max[r] == doctest::Approx(mx));
    CHECK(sum[r] == doctest::Approx(z).epsilon(1e-5));
    CHECK(weighted[r] / sum[r] == doctest::Approx(w / z).epsilon(1e-5));
  }
}
