// The prefill attention kernels of the cuda backend (kernels.cuh): the key table and flash-style prefill
// attention over cached and new keys.
#include "gpu/cuda/attention.cuh"

namespace dualpath::gpu::cuda {

namespace {

constexpr int prefill_warps = 8;  // 8 warps of 2 rows each keep more warps per key tile in flight
constexpr int rows_per_warp = 2;
constexpr int query_tile = rows_per_warp * prefill_warps;
constexpr int max_dims_per_lane = 8;  // head_dim <= 256

// grid (runs), block 128: each block writes its run's key pointers.
__global__ void expand_key_table_kernel(const kv_run* runs, const uint16_t** key_ptr, uint32_t row_elems) {
  const kv_run run = runs[blockIdx.x];
  for (uint32_t t = threadIdx.x; t < run.tokens; t += blockDim.x)
    key_ptr[run.first + t] = run.base + uint64_t(t) * row_elems;
}

// grid (query tiles, heads, items), block prefill_warps * 32. Each warp owns rows_per_warp query rows; lanes
// own keys when scoring and head dims when accumulating values.
__global__ void prefill_attention_kernel(const float* qkv, const uint16_t* const* key_ptr, const attn_item* items,
                                         float* out, uint32_t heads, uint32_t kv_heads, uint32_t hd, bool aligned) {
  DP_DYNAMIC_SHARED(float, smem);
  const attn_item it = items[blockIdx.z];
  const uint32_t t0 = blockIdx.x * query_tile;
  if (t0 >= it.n) return;
  const uint32_t head = blockIdx.y, g = head / (heads / kv_heads), Q = heads * hd, KV = kv_heads * hd, W = Q + 2 * KV,
                 lane = threadIdx.x % warp, wid = threadIdx.x / warp, ld = hd + 1;
  float* Ks = smem;                // [key_tile][hd + 1]
  float* Vs = Ks + key_tile * ld;  // [key_tile][hd + 1]
  float* Qs = Vs + key_tile * ld;  // [query_tile][hd]
  const float scale = rsqrtf(float(hd));
  for (uint32_t idx = threadIdx.x; idx < query_tile * hd; idx += blockDim.x) {
    const uint32_t qr = idx / hd, d = idx % hd;
    Qs[idx] = t0 + qr < it.n ? qkv[uint64_t(it.row0 + t0 + qr) * W + head * hd + d] * scale : 0.0f;
  }
  float m[rows_per_warp], l[rows_per_warp], acc[rows_per_warp][max_dims_per_lane];
  for (int r = 0; r < rows_per_warp; ++r) {
    m[r] = -FLT_MAX;
    l[r] = 0;
    for (int e = 0; e < max_dims_per_lane; ++e) acc[r][e] = 0;
  }
  const uint32_t last_row = min(it.n, t0 + query_tile);  // exclusive
  const uint32_t keys = it.cached + last_row;            // keys visible to the tile's last row
  for (uint32_t kt = 0; kt < keys; kt += key_tile) {
    __syncthreads();
    if (aligned) {  // the same values, 8 a load: a tile's loads are what a block waits on
      const uint32_t per_key = hd / 8;
      for (uint32_t idx = threadIdx.x; idx < key_tile * per_key; idx += blockDim.x) {
        const uint32_t j = idx / per_key, c = idx % per_key, key = kt + j;
        bf16x8 k8{}, v8{};
        if (key < keys) {
          const uint16_t* p = key_ptr[it.key_off + key];
          k8 = reinterpret_cast<const bf16x8*>(p + g * hd)[c];
          v8 = reinterpret_cast<const bf16x8*>(p + KV + g * hd)[c];
        }
        for (int w = 0; w < 4; ++w) {
          Ks[j * ld + 8 * c + 2 * w] = bf16_lo(k8.w[w]);
          Ks[j * ld + 8 * c + 2 * w + 1] = bf16_hi(k8.w[w]);
          Vs[j * ld + 8 * c + 2 * w] = bf16_lo(v8.w[w]);
          Vs[j * ld + 8 * c + 2 * w + 1] = bf16_hi(v8.w[w]);
        }
      }
    } else
      for (uint32_t idx = threadIdx.x; idx < key_tile * hd; idx += blockDim.x) {
        const uint32_t j = idx / hd, d = idx % hd, key = kt + j;
        float kv = 0, vv = 0;
        if (key < keys) {
          const uint16_t* p = key_ptr[it.key_off + key];
          kv = bf16_load(p[g * hd + d]);
          vv = bf16_load(p[KV + g * hd + d]);
        }
        Ks[j * ld + d] = kv;
        Vs[j * ld + d] = vv;
      }
    __syncthreads();
    // The warp's rows together: each key value read from shared memory serves every row, and each row sums
    // the same products in the same order as it would alone.
    const uint32_t key = kt + lane;
    float s[rows_per_warp], p[rows_per_warp];
    bool visible[rows_per_warp], live[rows_per_warp];
    for (int r = 0; r < rows_per_warp; ++r) {
      const uint32_t i = t0 + wid * rows_per_warp + r;
      visible[r] = i < it.n && key <= it.cached + i;
      s[r] = visible[r] ? 0.0f : -FLT_MAX;
    }
    for (uint32_t d = 0; d < hd; ++d) {
      const float kd = Ks[lane * ld + d];
      for (int r = 0; r < rows_per_warp; ++r)
        if (visible[r]) s[r] += Qs[(wid * rows_per_warp + r) * hd + d] * kd;
    }
    for (int r = 0; r < rows_per_warp; ++r) {
      const float tile_max = warp_max(s[r]);
      live[r] = tile_max != -FLT_MAX;  // something in this tile is visible to the row (uniform in the warp)
      p[r] = 0;
      if (!live[r]) continue;
      p[r] = online_softmax_step(m[r], l[r], acc[r], tile_max, s[r], visible[r]);
    }
    for (int k = 0; k < key_tile; ++k) {
      float pk[rows_per_warp];
      for (int r = 0; r < rows_per_warp; ++r) pk[r] = __shfl_sync(0xffffffffu, p[r], k);
      for (int e = 0; e < max_dims_per_lane; ++e) {
        const uint32_t d = lane + e * warp;
        if (d >= hd) continue;
        const float v = Vs[k * ld + d];
        for (int r = 0; r < rows_per_warp; ++r)
          if (live[r]) acc[r][e] += pk[r] * v;
      }
    }
  }
  for (int r = 0; r < rows_per_warp; ++r) {
    const uint32_t i = t0 + wid * rows_per_warp + r;
    if (i >= it.n) break;
    for (int e = 0; e < max_dims_per_lane; ++e) {
      const uint32_t d = lane + e * warp;
      if (d < hd) out[uint64_t(it.row0 + i) * Q + head * hd + d] = acc[r][e] / l[r];
    }
  }
}

}  // namespace

void expand_key_table(const kv_run* runs, uint32_t n_runs, const uint16_t** key_ptr, uint32_t row_elems,
                      cudaStream_t s) {
  if (n_runs) DP_LAUNCH(expand_key_table_kernel, n_runs, 128, 0, s)(runs, key_ptr, row_elems);
}

void prefill_attention(const float* qkv, const uint16_t* const* key_ptr, const attn_item* items, uint32_t n_items,
                       uint32_t max_new, float* out, uint32_t heads, uint32_t kv_heads, uint32_t head_dim, bool aligned,
                       cudaStream_t s) {
  if (!n_items || !max_new) return;
  const size_t shared = (2 * key_tile * (head_dim + 1) + query_tile * head_dim) * sizeof(float);
  cudaFuncSetAttribute(prefill_attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared));
  const dim3 grid((max_new + query_tile - 1) / query_tile, heads, n_items);
  DP_LAUNCH(prefill_attention_kernel, grid, prefill_warps * warp, shared, s)
  (qkv, key_ptr, items, out, heads, kv_heads, head_dim, aligned);
}

}  // namespace dualpath::gpu::cuda
