// The row kernels of the cuda backend (kernels.cuh): embedding, norms, rotary embedding and KV store,
// activation, conversions. The attention kernels are in attention.cu (prefill) and decode_attention.cu.
#include <algorithm>

#include "gpu/cuda/device.cuh"

namespace dualpath::gpu::cuda {

namespace {

__global__ void embed_kernel(const uint16_t* table, const int32_t* tokens, float* x, uint32_t hidden) {
  const uint32_t r = blockIdx.x;
  const uint16_t* src = table + uint64_t(tokens[r]) * hidden;
  for (uint32_t i = threadIdx.x; i < hidden; i += blockDim.x) x[uint64_t(r) * hidden + i] = bf16_load(src[i]);
}

__global__ void rmsnorm_kernel(const float* x, const float* w, uint16_t* out, uint32_t dim, float eps) {
  __shared__ float partial[32];
  const float* row = x + uint64_t(blockIdx.x) * dim;
  float ss = 0;
  for (uint32_t i = threadIdx.x; i < dim; i += blockDim.x) ss += row[i] * row[i];
  ss = warp_sum(ss);
  if (threadIdx.x % warp == 0) partial[threadIdx.x / warp] = ss;
  __syncthreads();
  if (threadIdx.x < warp) {
    float v = threadIdx.x < blockDim.x / warp ? partial[threadIdx.x] : 0.0f;
    v = warp_sum(v);
    if (threadIdx.x == 0) partial[0] = v;
  }
  __syncthreads();
  const float inv = 1.0f / sqrtf(partial[0] / float(dim) + eps);
  for (uint32_t i = threadIdx.x; i < dim; i += blockDim.x)
    out[uint64_t(blockIdx.x) * dim + i] = bf16_round(row[i] * inv * w[i]);
}

__global__ void bias_rope_store_kernel(float* qkv, const float* bias, const uint32_t* pos, uint16_t* kv_out,
                                       uint32_t heads, uint32_t kv_heads, uint32_t hd, double theta) {
  const uint32_t r = blockIdx.x, half = hd / 2, Q = heads * hd, KV = kv_heads * hd, W = Q + 2 * KV;
  float* row = qkv + uint64_t(r) * W;
  for (uint32_t i = threadIdx.x; i < W; i += blockDim.x) row[i] += bias[i];
  __syncthreads();
  // Rotate pairs (i, i + half) of every q and k head.
  for (uint32_t idx = threadIdx.x; idx < (heads + kv_heads) * half; idx += blockDim.x) {
    const uint32_t h = idx / half, i = idx % half;
    float* v = row + uint64_t(h) * hd;  // k heads follow the q heads directly
    const double inv_freq = pow(theta, -2.0 * double(i) / double(hd));
    double sn, cs;
    sincos(double(pos[r]) * inv_freq, &sn, &cs);
    const float c = float(cs), s = float(sn), a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = b * c + a * s;
  }
  __syncthreads();
  uint16_t* dst = kv_out + uint64_t(r) * 2 * KV;
  for (uint32_t i = threadIdx.x; i < 2 * KV; i += blockDim.x) {
    const uint16_t h = bf16_round(row[Q + i]);
    dst[i] = h;
    row[Q + i] = bf16_load(h);
  }
}

__global__ void silu_mul_kernel(const float* gu, uint16_t* out, uint32_t inter) {
  const float* g = gu + uint64_t(blockIdx.x) * 2 * inter;
  for (uint32_t i = threadIdx.x; i < inter; i += blockDim.x) {
    const float x = g[i];
    out[uint64_t(blockIdx.x) * inter + i] = bf16_round(x / (1.0f + expf(-x)) * g[inter + i]);
  }
}

__global__ void to_bf16_kernel(const float* in, uint16_t* out, uint64_t n) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    out[i] = bf16_round(in[i]);
}

__global__ void gather_rows_kernel(const float* x, const uint32_t* rows, float* out, uint32_t dim) {
  for (uint32_t i = threadIdx.x; i < dim; i += blockDim.x)
    out[uint64_t(blockIdx.x) * dim + i] = x[uint64_t(rows[blockIdx.x]) * dim + i];
}

unsigned blocks_for(uint64_t n) { return unsigned(std::min<uint64_t>((n + 255) / 256, 65535)); }

}  // namespace

void embed(const uint16_t* table, const int32_t* tokens, float* x, uint32_t rows, uint32_t hidden, cudaStream_t s) {
  if (rows) DP_LAUNCH(embed_kernel, rows, 256, 0, s)(table, tokens, x, hidden);
}

void rmsnorm_bf16(const float* x, const float* w, uint16_t* out, uint32_t rows, uint32_t dim, float eps,
                  cudaStream_t s) {
  if (rows) DP_LAUNCH(rmsnorm_kernel, rows, 256, 0, s)(x, w, out, dim, eps);
}

void bias_rope_store(float* qkv, const float* bias, const uint32_t* pos, uint16_t* kv_out, uint32_t rows,
                     uint32_t heads, uint32_t kv_heads, uint32_t head_dim, double theta, cudaStream_t s) {
  if (rows)
    DP_LAUNCH(bias_rope_store_kernel, rows, 256, 0, s)(qkv, bias, pos, kv_out, heads, kv_heads, head_dim, theta);
}

void silu_mul_bf16(const float* gu, uint16_t* out, uint32_t rows, uint32_t inter, cudaStream_t s) {
  if (rows) DP_LAUNCH(silu_mul_kernel, rows, 256, 0, s)(gu, out, inter);
}

void to_bf16(const float* in, uint16_t* out, uint64_t n, cudaStream_t s) {
  if (n) DP_LAUNCH(to_bf16_kernel, blocks_for(n), 256, 0, s)(in, out, n);
}

void f32_to_bf16_weights(const float* in, uint16_t* out, uint64_t n, cudaStream_t s) { to_bf16(in, out, n, s); }

void gather_rows(const float* x, const uint32_t* rows, float* out, uint32_t n, uint32_t dim, cudaStream_t s) {
  if (n) DP_LAUNCH(gather_rows_kernel, n, 256, 0, s)(x, rows, out, dim);
}

}  // namespace dualpath::gpu::cuda
