// The cuda kernels, run by the SIMT emulator, against plain references; and the emulator's own checks, shown to
// fire on kernels written wrong on purpose. These run everywhere; the real-GPU tests are in cuda_backend_test.
#include "emulated_kernels.hpp"  // first: the CUDA vocabulary for the kernels below

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gpu/bf16.hpp"
#include "gpu/cpu_kernels.hpp"

namespace k = dualpath::gpu::simt_cuda;
using dualpath::gpu::bf16_to_float;
using dualpath::gpu::float_to_bf16;

namespace {

template <typename T>
struct device_vec {
  T* p = nullptr;
  size_t n = 0;
  explicit device_vec(const std::vector<T>& h) : n(h.size()) {
    REQUIRE(cudaMalloc(&p, n * sizeof(T)) == cudaSuccess);
    REQUIRE(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  explicit device_vec(size_t count) : n(count) { REQUIRE(cudaMalloc(&p, n * sizeof(T)) == cudaSuccess); }
  device_vec(const device_vec&) = delete;
  ~device_vec() { cudaFree(p); }
  std::vector<T> host() const {
    std::vector<T> h(n);
    REQUIRE(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
    return h;
  }
};

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

double max_rel(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num = std::max(num, std::abs(double(got[i]) - want[i]));
    den = std::max(den, std::abs(want[i]));
  }
  return den == 0 ? num : num / den;
}

// One attention problem: requests (cached, n) with their KV rows paged in shuffled order through a key table.
struct attention_case {
  uint32_t heads, kv_heads, hd;
  std::vector<std::pair<uint32_t, uint32_t>> requests;  // (cached, new)

  std::vector<float> last;

  uint32_t Q() const { return heads * hd; }
  uint32_t KV() const { return kv_heads * hd; }
  uint32_t W() const { return Q() + 2 * KV(); }

  // Runs the kernel (prefill or decode) and returns the max relative error against a double reference.
  // `aligned`: the decode kernel loads keys 8 values at a time (rows here start on 16 bytes when 2·KV·2 does).
  // The output stays in `last` for comparing two runs.
  double run(bool decode, uint32_t seed, bool aligned = false, bool share_kv = false) {
    std::vector<k::attn_item> items;
    uint32_t rows = 0, keys = 0, max_new = 0;
    for (auto [cached, n] : requests) {
      items.push_back({rows, n, cached, keys});
      rows += n;
      keys += cached + n;
      max_new = std::max(max_new, n);
    }
    const auto qkv = random_floats(uint64_t(rows) * W(), seed);
    const auto kv_values = random_floats(uint64_t(keys) * 2 * KV(), seed + 1);
    std::vector<uint16_t> kv_rows(kv_values.size());
    for (size_t i = 0; i < kv_rows.size(); ++i) kv_rows[i] = float_to_bf16(kv_values[i]);
    // Pages in a scrambled order: key i of the table points at row perm[i].
    std::vector<uint32_t> perm(keys);
    for (uint32_t i = 0; i < keys; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), std::mt19937(seed));

    device_vec<float> d_qkv(qkv), d_out(uint64_t(rows) * Q());
    device_vec<uint16_t> d_kv(kv_rows);
    std::vector<const uint16_t*> table(keys);
    for (uint32_t i = 0; i < keys; ++i) table[i] = d_kv.p + uint64_t(perm[i]) * 2 * KV();
    device_vec<const uint16_t*> d_table(table);
    device_vec<k::attn_item> d_items(items);
    // Decode splits each request's keys into chunks as the backend does (several for the long requests).
    uint32_t splits = 0;
    for (const auto& it : items) splits = std::max(splits, k::decode_splits(it.cached + it.n));
    device_vec<float> d_partial(k::decode_partial_floats(uint32_t(items.size()), heads, hd, splits));
    if (decode)
      k::decode_attention(d_qkv.p, d_table.p, d_items.p, uint32_t(items.size()), splits,
                          splits > 1 ? d_partial.p : nullptr, d_out.p, heads, kv_heads, hd, aligned, share_kv, nullptr);
    else
      k::prefill_attention(d_qkv.p, d_table.p, d_items.p, uint32_t(items.size()), max_new, d_out.p, heads, kv_heads, hd,
                           aligned, nullptr);
    REQUIRE(cudaGetLastError() == cudaSuccess);
    const auto got = d_out.host();
    last = got;

    std::vector<double> want(got.size());
    const uint32_t group = heads / kv_heads;
    for (const auto& it : items)
      for (uint32_t i = 0; i < it.n; ++i)
        for (uint32_t h = 0; h < heads; ++h) {
          const uint32_t g = h / group, visible = it.cached + i + 1;
          const float* q = &qkv[uint64_t(it.row0 + i) * W() + h * hd];
          std::vector<double> s(visible);
          double mx = -1e300;
          for (uint32_t j = 0; j < visible; ++j) {
            const uint16_t* kr = &kv_rows[uint64_t(perm[it.key_off + j]) * 2 * KV()];
            double dot = 0;
            for (uint32_t d = 0; d < hd; ++d) dot += double(q[d]) * bf16_to_float(kr[g * hd + d]);
            s[j] = dot / std::sqrt(double(hd));
            mx = std::max(mx, s[j]);
          }
          double sum = 0;
          for (auto& e : s) sum += (e = std::exp(e - mx));
          for (uint32_t j = 0; j < visible; ++j) {
            const uint16_t* vr = &kv_rows[uint64_t(perm[it.key_off + j]) * 2 * KV() + KV()];
            for (uint32_t d = 0; d < hd; ++d)
              want[uint64_t(it.row0 + i) * Q() + h * hd + d] += s[j] / sum * bf16_to_float(vr[g * hd + d]);
          }
        }
    return max_rel(got, want);
  }
};

// Test kernels: a correct block reduction, and two that break the rules.
__global__ void block_sum_kernel(const float* in, float* out) {
  __shared__ float partial[32];
  const unsigned t = threadIdx.x + threadIdx.y * blockDim.x, n = blockDim.x * blockDim.y;
  const unsigned block = blockIdx.x + blockIdx.y * gridDim.x;
  float v = in[block * n + t];
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (t % 32 == 0) partial[t / 32] = v;
  __syncthreads();
  if (t == 0) {
    float s = 0;
    for (unsigned w = 0; w < n / 32; ++w) s += partial[w];
    out[block] = s;
  }
}

__global__ void divergent_shuffle_kernel(float* out) {
  float v = float(threadIdx.x);
  if (threadIdx.x % 32 < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

__global__ void partial_mask_kernel(float* out) { out[threadIdx.x] = __shfl_sync(0x0000ffffu, 1.0f, 0); }

__global__ void shared_reader_kernel(float* out) {
  DP_DYNAMIC_SHARED(float, smem);
  out[threadIdx.x] = smem[threadIdx.x];
}

}  // namespace

TEST_CASE("the SIMT emulator runs barriers and shuffles, and refuses what a GPU would not run") {
  // 2-D grid and blocks; values chosen so float sums are exact.
  const dim3 grid(3, 2), block(64, 2);
  std::vector<float> in(6 * 128);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i % 97);
  device_vec<float> d_in(in), d_out(6);
  DP_LAUNCH(block_sum_kernel, grid, block, 0, nullptr)(d_in.p, d_out.p);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const auto sums = d_out.host();
  for (size_t b = 0; b < 6; ++b) {
    float want = 0;
    for (size_t t = 0; t < 128; ++t) want += in[b * 128 + t];
    CHECK(sums[b] == want);
  }

  device_vec<float> scratch(64);
  CHECK_THROWS_AS(DP_LAUNCH(divergent_shuffle_kernel, 1, 64, 0, nullptr)(scratch.p), simt::kernel_fault);
  CHECK_THROWS_AS(DP_LAUNCH(partial_mask_kernel, 1, 64, 0, nullptr)(scratch.p), simt::kernel_fault);

  // A launch a GPU refuses does not run and leaves its error for cudaGetLastError.
  DP_LAUNCH(block_sum_kernel, 1, 2048, 0, nullptr)(d_in.p, d_out.p);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  std::vector<float> host_out(6, -1.0f);
  DP_LAUNCH(block_sum_kernel, grid, block, 0, nullptr)(d_in.p, host_out.data());  // a host pointer
  CHECK(cudaGetLastError() == cudaErrorIllegalAddress);
  CHECK(host_out[0] == -1.0f);
  DP_LAUNCH(shared_reader_kernel, 1, 64, 64 * 1024, nullptr)(scratch.p);  // over 48 KiB without opting in
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  CHECK(cudaFuncSetAttribute(shared_reader_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024) ==
        cudaSuccess);
  DP_LAUNCH(shared_reader_kernel, 1, 64, 64 * 1024, nullptr)(scratch.p);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  CHECK(std::isnan(scratch.host()[5]));  // shared memory starts as garbage, never as zeros
  CHECK(cudaFuncSetAttribute(shared_reader_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 300 * 1024) ==
        cudaErrorInvalidValue);
  // Copies whose kind contradicts their pointers are refused.
  std::vector<float> h(4);
  CHECK(cudaMemcpy(h.data(), h.data() + 2, 8, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
  cudaGetLastError();
}

TEST_CASE("emulated bf16 rounding is bit-identical to the host conversion") {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.5f, 3.0e38f, -3.0e38f, 1e-40f, -1e-42f, INFINITY, -INFINITY, NAN};
  std::mt19937 rng(5);
  for (int i = 0; i < 50000; ++i) {
    const uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    v.push_back(f);
    v.push_back(bf16_to_float(uint16_t(bits)) + std::ldexp(bf16_to_float(uint16_t(bits)), -8));  // ties
  }
  device_vec<float> d_in(v);
  device_vec<uint16_t> d_out(v.size());
  k::to_bf16(d_in.p, d_out.p, v.size(), nullptr);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const auto got = d_out.host();
  size_t mismatches = 0;
  for (size_t i = 0; i < v.size(); ++i) mismatches += got[i] != float_to_bf16(v[i]);
  CHECK(mismatches == 0);
}

TEST_CASE("emulated prefill attention equals a plain reference (paged keys, GQA, causal, ragged tiles)") {
  const std::vector<std::pair<uint32_t, uint32_t>> requests = {{0, 1}, {0, 37}, {45, 16}, {100, 33}, {31, 2}};
  for (auto [heads, kv_heads, hd] : std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>{
           {4, 2, 32}, {8, 2, 64}, {2, 1, 128}, {2, 2, 256}, {3, 3, 40}}) {
    CAPTURE(heads);
    CAPTURE(hd);
    attention_case c{heads, kv_heads, hd, requests};
    CHECK(c.run(false, 11 + hd) < 1e-4);
    if (hd % 8) continue;  // the vector loads need whole groups of 8
    const auto scalar = c.last;
    CHECK(c.run(false, 11 + hd, true) < 1e-4);
    CHECK(c.last == scalar);
  }
}

TEST_CASE("emulated decode attention equals a plain reference (empty warps, tile edges, long contexts)") {
  std::vector<std::pair<uint32_t, uint32_t>> requests;
  // Up to three key chunks of the split decode (k::decode_chunk_keys), chunk edges included.
  for (uint32_t cached : {0u, 1u, 31u, 32u, 33u, 127u, 128u, 129u, 254u, 255u, 256u, 300u, 700u})
    requests.push_back({cached, 1});
  for (auto [heads, kv_heads, hd] : std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>{
           {4, 2, 32}, {8, 4, 64}, {2, 1, 256}, {8, 2, 64}, {8, 1, 128}, {6, 2, 40}, {4, 4, 64}}) {
    CAPTURE(hd);
    attention_case c{heads, kv_heads, hd, requests};
    CHECK(c.run(true, 3 + hd) < 1e-4);
    const auto scalar = c.last;
    CHECK(c.run(true, 3 + hd, true) < 1e-4);
    CHECK(c.last == scalar);  // the vector loads sum the same products in the same order
    // A block per KV head (its query heads together) gives the same bits, with and without vector loads.
    CHECK(c.run(true, 3 + hd, false, true) < 1e-4);
    CHECK(c.last == scalar);
    CHECK(c.run(true, 3 + hd, true, true) < 1e-4);
    CHECK(c.last == scalar);
  }
  // The prefill kernel agrees on the same single-token requests.
  attention_case c{4, 2, 32, requests};
  CHECK(c.run(false, 35) < 1e-4);
  // Long requests take the larger chunks (k::decode_chunk_keys), beside a short one in the same batch: the edge
  // of the switch on both sides, and a last chunk cut short.
  CHECK(k::decode_chunk_keys(8192) < k::decode_chunk_keys(8193));
  attention_case long_case{8, 4, 64, {{8191, 1}, {300, 1}, {8192, 1}, {9300, 1}}};
  CHECK(long_case.run(true, 77) < 1e-4);
  const auto scalar = long_case.last;
  CHECK(long_case.run(true, 77, true, true) < 1e-4);
  CHECK(long_case.last == scalar);
}

TEST_CASE("emulated row kernels match the cpu kernels (embed, rmsnorm, bias+rope+store, silu, gather)") {
  const uint32_t rows = 7, hidden = 96, vocab = 50, heads = 4, kv_heads = 2, hd = 16, inter = 40;
  const uint32_t Q = heads * hd, KV = kv_heads * hd, W = Q + 2 * KV;
  // Embedding: bf16 table rows widened to fp32.
  std::vector<uint16_t> table(vocab * hidden);
  for (size_t i = 0; i < table.size(); ++i) table[i] = float_to_bf16(float(int(i % 251) - 125) / 64.0f);
  const std::vector<int32_t> tokens = {3, 0, 49, 17, 17, 8, 22};
  device_vec<uint16_t> d_table(table);
  device_vec<int32_t> d_tokens(tokens);
  device_vec<float> d_x(rows * hidden);
  k::embed(d_table.p, d_tokens.p, d_x.p, rows, hidden, nullptr);
  const auto x = d_x.host();
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < hidden; ++i) REQUIRE(x[r * hidden + i] == bf16_to_float(table[tokens[r] * hidden + i]));

  // RMSNorm to bf16.
  const auto w = random_floats(hidden, 2);
  device_vec<float> d_w(w);
  device_vec<uint16_t> d_norm(rows * hidden);
  k::rmsnorm_bf16(d_x.p, d_w.p, d_norm.p, rows, hidden, 1e-6f, nullptr);
  std::vector<float> ref(rows * hidden);
  dualpath::gpu::cpu::rmsnorm(x.data(), w.data(), ref.data(), rows, hidden, 1e-6f);
  const auto norm = d_norm.host();
  for (size_t i = 0; i < ref.size(); ++i)
    REQUIRE(std::abs(bf16_to_float(norm[i]) - ref[i]) <= 8e-3 * std::abs(ref[i]) + 1e-6);

  // Bias, RoPE on q and k heads at each row's position, K/V rounded to bf16 and stored.
  const auto qkv = random_floats(rows * W, 3), bias = random_floats(W, 4, 0.1f);
  const std::vector<uint32_t> pos = {0, 1, 5, 100, 1000, 4095, 65000};
  device_vec<float> d_qkv(qkv), d_bias(bias);
  device_vec<uint32_t> d_pos(pos);
  device_vec<uint16_t> d_kv(rows * 2 * KV);
  k::bias_rope_store(d_qkv.p, d_bias.p, d_pos.p, d_kv.p, rows, heads, kv_heads, hd, 1e6, nullptr);
  std::vector<float> want = qkv;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < W; ++i) want[r * W + i] += bias[i];
  dualpath::gpu::cpu::rope(want.data(), rows, W, heads + kv_heads, hd, pos.data(), 1e6);
  const auto got = d_qkv.host();
  const auto kv = d_kv.host();
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t i = 0; i < Q; ++i)
      REQUIRE(std::abs(got[r * W + i] - want[r * W + i]) <= 1e-5f * (1 + std::abs(want[r * W + i])));
    for (uint32_t i = 0; i < 2 * KV; ++i) {
      REQUIRE(std::abs(bf16_to_float(kv[r * 2 * KV + i]) - want[r * W + Q + i]) <=
              8e-3f * std::abs(want[r * W + Q + i]) + 1e-6f);
      REQUIRE(got[r * W + Q + i] == bf16_to_float(kv[r * 2 * KV + i]));  // attention sees the stored values
    }
  }

  // SiLU(gate) * up to bf16.
  const auto gu = random_floats(rows * 2 * inter, 6);
  device_vec<float> d_gu(gu);
  device_vec<uint16_t> d_act(rows * inter);
  k::silu_mul_bf16(d_gu.p, d_act.p, rows, inter, nullptr);
  std::vector<float> act_ref(rows * inter);
  dualpath::gpu::cpu::silu_mul(gu.data(), act_ref.data(), rows, inter);
  const auto act = d_act.host();
  for (size_t i = 0; i < act.size(); ++i)
    REQUIRE(std::abs(bf16_to_float(act[i]) - act_ref[i]) <= 8e-3f * std::abs(act_ref[i]) + 1e-6f);

  // Gather of the rows that emit a token.
  const std::vector<uint32_t> pick = {6, 0, 3};
  device_vec<uint32_t> d_pick(pick);
  device_vec<float> d_rows(pick.size() * hidden);
  k::gather_rows(d_x.p, d_pick.p, d_rows.p, uint32_t(pick.size()), hidden, nullptr);
  const auto picked = d_rows.host();
  for (size_t e = 0; e < pick.size(); ++e)
    for (uint32_t i = 0; i < hidden; ++i) REQUIRE(picked[e * hidden + i] == x[pick[e] * hidden + i]);
  CHECK(cudaGetLastError() == cudaSuccess);
}
