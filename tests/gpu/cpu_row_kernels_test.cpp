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
      // The vector exp's error (cpu_kernels.cpp): 1e-7 of e^g, up to 2e-6 for gates below -20 on CPUs whose
      // clone does not fuse x·log2 e into an FMA, where the result is under 1e-8·|u|.
      CHECK(std::abs(out[r * inter + i] - want) <= (g < -20 ? 3e-6 : 1e-6) * std::abs(want) + 1e-30);
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

TEST_CASE("rmsnorm matches a double-precision norm, vector lanes and tail alike, each row on its own") {
  const uint32_t dim = 37;  // two sixteen-lane blocks and a tail of five
  const uint64_t rows = 4;
  std::mt19937 rng{5};
  std::uniform_real_distribution<float> val(-3.0f, 3.0f);
  std::vector<float> x(rows * dim), w(dim), out(rows * dim), one(dim);
  for (auto& v : x) v = val(rng);
  for (auto& v : w) v = val(rng);
  x[dim] = 1e-3f;  // a row of tiny values, where eps matters
  for (uint32_t i = 1; i < dim; ++i) x[dim + i] = 0.0f;
  const float eps = 1e-5f;
  cpu::rmsnorm(x.data(), w.data(), out.data(), rows, dim, eps);
  for (uint64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (uint32_t i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ss / dim + eps);
    for (uint32_t i = 0; i < dim; ++i)
      CHECK(out[r * dim + i] == doctest::Approx(x[r * dim + i] * inv * w[i]).epsilon(1e-5));
    // A row normalised alone gives the same bits as in the batch (decode rows equal a recompute's).
    cpu::rmsnorm(&x[r * dim], w.data(), one.data(), 1, dim, eps);
    for (uint32_t i = 0; i < dim; ++i) CHECK(one[i] == out[r * dim + i]);
  }
}

TEST_CASE("rope from a batch's table equals rope from positions, bit for bit, from any first row") {
  const uint32_t hd = 16, heads = 3;
  const uint64_t rows = 5, stride = heads * hd + 7;  // rows wider than their heads, as a qkv row is
  const std::vector<uint32_t> pos{0, 1, 17, 4095, 65537};
  std::mt19937 rng{9};
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  std::vector<float> x(rows * stride);
  for (auto& v : x) v = val(rng);
  const cpu::rope_angles table = cpu::rope_table(pos.data(), rows, hd, 1e6);
  for (uint64_t row0 = 0; row0 < rows; ++row0) {
    std::vector<float> want(x.begin() + long(row0 * stride), x.end()), got = want;
    cpu::rope(want.data(), rows - row0, stride, heads, hd, &pos[row0], 1e6);
    cpu::rope(got.data(), rows - row0, stride, heads, table, row0);
    CHECK(got == want);
    CHECK(got != std::vector<float>(x.begin() + long(row0 * stride), x.end()));  // it did rotate
  }
  // Position 0 is the identity; position 1 turns the first pair by one radian.
  std::vector<float> p{1.0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  std::vector<float> q = p;
  cpu::rope(p.data(), 1, hd, 1, table, 0);
  CHECK(p == q);
  cpu::rope(q.data(), 1, hd, 1, table, 1);
  CHECK(q[0] == doctest::Approx(std::cos(1.0)));
  CHECK(q[8] == doctest::Approx(std::sin(1.0)));
}
