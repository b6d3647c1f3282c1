#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gpu/bf16.hpp"
#include "gpu/cpu_bf16_avx2.hpp"
#include "gpu/cpu_bf16_avx512.hpp"
#include "gpu/cpu_kernels.hpp"
#include "gpu/cpu_simd.hpp"
#include "gpu/cpu_tile.hpp"

namespace cpu = dualpath::gpu::cpu;

namespace {

// Rows of `stride` bytes holding, from element `off`, kv_heads keys then kv_heads values of hd bf16 each.
struct kv_rows {
  uint32_t kv_heads, hd, tokens;
  uint64_t off, stride;
  std::vector<std::byte> bytes;

  kv_rows(uint32_t heads, uint32_t width, uint32_t n, uint32_t seed)
      : kv_heads(heads), hd(width), tokens(n), off(8), stride((8 + 2 * heads * width + 24) * 2) {
    bytes.resize(uint64_t(tokens) * stride);
    std::mt19937 rng{seed};
    std::uniform_real_distribution<float> u(-1, 1);
    for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
      const uint16_t h = dualpath::gpu::float_to_bf16(u(rng));
      std::memcpy(&bytes[i], &h, 2);
    }
  }
  double at(uint32_t t, uint64_t element) const {
    uint16_t h;
    std::memcpy(&h, &bytes[t * stride + (off + element) * 2], 2);
    return dualpath::gpu::bf16_to_float(h);
  }
};

std::vector<float> random_floats(uint64_t n, uint32_t seed) {
  std::mt19937 rng{seed};
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

using scores_fn = bool (*)(const float*, uint32_t, uint64_t, uint32_t, const std::byte*, uint32_t, uint64_t, uint64_t,
                           float, float*, uint64_t, uint64_t, cpu::rows_ahead);
using values_fn = bool (*)(const float*, uint32_t, uint64_t, uint64_t, uint64_t, const std::byte*, uint32_t, uint64_t,
                           uint64_t, uint32_t, float*, cpu::rows_ahead);

// Both passes against a double-precision sum at head width hd, for 1, 2, 3 and 5 query rows a head (the
// kernels' pairs of rows and their remainder); false where the pair declines that width on this CPU.
bool passes_agree(uint32_t hd, scores_fn scores, values_fn values) {
  for (uint64_t rq : {1u, 2u, 3u, 5u}) {
    CAPTURE(hd);
    CAPTURE(rq);
    const uint32_t heads = 2, tokens = 203;  // several token groups and value blocks, with a remainder
    const kv_rows kv(heads, hd, tokens, hd * 31 + uint32_t(rq));
    const auto q = random_floats(heads * rq * hd, 5);
    const uint64_t ctx = tokens + 9, j0 = 4;  // the span sits at columns 4.. of wider score rows
    const float scale = 0.125f;
    std::vector<float> s(heads * rq * ctx, -7.0f);
    // Half the cases also ask for rows ahead (here the span's own rows again): asking changes no sum.
    const cpu::rows_ahead ahead = rq % 2 ? cpu::rows_ahead{kv.bytes.data(), tokens} : cpu::rows_ahead{};
    if (!scores(q.data(), heads, rq, hd, kv.bytes.data(), tokens, kv.stride, kv.off, scale, s.data(), ctx, j0, ahead))
      return false;
    double worst = 0;
    for (uint32_t g = 0; g < heads; ++g)
      for (uint64_t r = 0; r < rq; ++r) {
        CHECK(s[(g * rq + r) * ctx + j0 - 1] == -7.0f);  // outside the span: untouched
        CHECK(s[(g * rq + r) * ctx + j0 + tokens] == -7.0f);
        for (uint32_t t = 0; t < tokens; ++t) {
          double dot = 0;
          for (uint32_t d = 0; d < hd; ++d) dot += double(q[(g * rq + r) * hd + d]) * kv.at(t, g * hd + d);
          worst = std::max(worst, std::abs(dot * scale - s[(g * rq + r) * ctx + j0 + t]));
        }
      }
    CHECK(worst < 1e-5);

    const auto p = random_floats(heads * rq * ctx, 6);
    auto o = random_floats(heads * rq * hd, 7);
    const auto o0 = o;
    REQUIRE(values(p.data(), heads, rq, ctx, j0, kv.bytes.data(), tokens, kv.stride, kv.off + heads * hd, hd, o.data(),
                   ahead));
    worst = 0;
    for (uint32_t g = 0; g < heads; ++g)
      for (uint64_t r = 0; r < rq; ++r)
        for (uint32_t d = 0; d < hd; ++d) {
          double sum = o0[(g * rq + r) * hd + d];
          for (uint32_t t = 0; t < tokens; ++t)
            sum += double(p[(g * rq + r) * ctx + j0 + t]) * kv.at(t, heads * hd + g * hd + d);
          worst = std::max(worst, std::abs(sum - o[(g * rq + r) * hd + d]));
        }
    CHECK(worst < 1e-4);
  }
  return true;
}

bool dispatched_scores(const float* qg, uint32_t kv_heads, uint64_t rq, uint32_t hd, const std::byte* base,
                       uint32_t tokens, uint64_t stride, uint64_t off, float scale, float* s, uint64_t ctx, uint64_t j0,
                       cpu::rows_ahead ahead) {
  cpu::bf16_scores(qg, kv_heads, rq, hd, base, tokens, stride, off, scale, s, ctx, j0, ahead);
  return true;
}

bool dispatched_values(const float* s, uint32_t kv_heads, uint64_t rq, uint64_t ctx, uint64_t j0, const std::byte* base,
                       uint32_t tokens, uint64_t stride, uint64_t off, uint32_t hd, float* og, cpu::rows_ahead ahead) {
  cpu::bf16_weighted_values(s, kv_heads, rq, ctx, j0, base, tokens, stride, off, hd, og, ahead);
  return true;
}

}  // namespace

TEST_CASE("decode attention's bf16 passes agree with a double-precision sum, on every head width and row count") {
  // 16 takes the portable kernels everywhere; 32, 64 and 128 the AVX-512 ones where the CPU has them, else
  // the AVX2 ones.
  for (uint32_t hd : {16u, 32u, 64u, 128u}) CHECK(passes_agree(hd, dispatched_scores, dispatched_values));
}

TEST_CASE("the AVX2 passes agree with a double-precision sum too, wherever the CPU has AVX2") {
  // Called directly: on a CPU with AVX-512 the dispatch above never reaches them.
  if (!cpu::has_avx2_fma()) return;
  for (uint32_t hd : {32u, 64u, 128u}) CHECK(passes_agree(hd, cpu::bf16_scores_avx2, cpu::bf16_weighted_values_avx2));
  CHECK_FALSE(passes_agree(16, cpu::bf16_scores_avx2, cpu::bf16_weighted_values_avx2));  // not built for 16
}

TEST_CASE("the AVX-512 passes decline head widths they are not built for") {
  const kv_rows kv(1, 16, 4, 1);
  std::vector<float> q(16), s(4, -1.0f), o(16);
  CHECK_FALSE(
      cpu::bf16_scores_avx512(q.data(), 1, 1, 16, kv.bytes.data(), 4, kv.stride, kv.off, 1.0f, s.data(), 4, 0, {}));
  CHECK_FALSE(cpu::bf16_weighted_values_avx512(s.data(), 1, 1, 4, 0, kv.bytes.data(), 4, kv.stride, kv.off + 16, 16,
                                               o.data(), {}));
  CHECK(s[0] == -1.0f);
}

using tile_scores_fn = bool (*)(const float*, uint64_t, uint32_t, const float*, uint64_t, float, float*, uint64_t);
using tile_values_fn = bool (*)(const float*, uint64_t, uint64_t, uint64_t, const float*, uint64_t, uint32_t, float*);

// One width's tile kernels against a double-precision sum at head widths 32, 64 and 128; false where they do
// not run on this CPU.
bool tile_kernels_agree(tile_scores_fn tile_scores, tile_values_fn tile_values) {
  for (uint32_t hd : {32u, 64u, 128u}) {
    CAPTURE(hd);
    constexpr uint64_t rows = 2 * cpu::tile_rows, keys = 3 * cpu::tile_keys, stride = keys + 5;
    const auto q = random_floats(rows * hd, 1), k = random_floats(keys * hd, 2), v = random_floats(keys * hd, 3),
               p = random_floats(rows * stride, 4), o0 = random_floats(rows * hd, 5);
    // The keys in the kernels' layout: groups of [dimension][tile_keys].
    std::vector<float> kt(keys * hd);
    for (uint64_t j = 0; j < keys; ++j)
      for (uint64_t d = 0; d < hd; ++d)
        kt[(j / cpu::tile_keys * hd + d) * cpu::tile_keys + j % cpu::tile_keys] = k[j * hd + d];
    std::vector<float> s(rows * stride, -7.0f);
    if (!tile_scores(q.data(), rows, hd, kt.data(), keys, 0.5f, s.data(), stride)) return false;
    double worst = 0;
    for (uint64_t r = 0; r < rows; ++r) {
      for (uint64_t j = 0; j < keys; ++j) {
        double want = 0;
        for (uint64_t d = 0; d < hd; ++d) want += double(q[r * hd + d]) * k[j * hd + d];
        worst = std::max(worst, std::abs(0.5 * want - s[r * stride + j]));
      }
      for (uint64_t j = keys; j < stride; ++j) CHECK(s[r * stride + j] == -7.0f);  // past `keys`: untouched
    }
    CHECK(worst < 1e-4);

    // Values over a key count that is no multiple of the kernel's chunk, rows hd apart.
    const uint64_t some = keys - 3;
    std::vector<float> o = o0;
    REQUIRE(tile_values(p.data(), stride, rows, some, v.data(), hd, hd, o.data()));
    worst = 0;
    for (uint64_t r = 0; r < rows; ++r)
      for (uint64_t d = 0; d < hd; ++d) {
        double want = o0[r * hd + d];
        for (uint64_t j = 0; j < some; ++j) want += double(p[r * stride + j]) * v[j * hd + d];
        worst = std::max(worst, std::abs(want - o[r * hd + d]));
      }
    CHECK(worst < 1e-4);
  }
  return true;
}

TEST_CASE("the prefill tile kernels agree with a double-precision sum, on every head width") {
  const bool avx512 = tile_kernels_agree(cpu::tile_scores_avx512, cpu::tile_values_avx512);
  const bool avx2 = tile_kernels_agree(cpu::tile_scores_avx2, cpu::tile_values_avx2);
  CHECK(avx512 == cpu::has_avx512f());
  CHECK(avx2 == cpu::has_avx2_fma());
  CHECK(cpu::tile_kernels_usable(64) == (avx512 || avx2));
  CHECK_FALSE(cpu::tile_kernels_usable(16));
}
