// The attention kernels of the cuda backend (kernels.cuh): the key table, prefill attention and the split,
// KV-head-shared decode attention with its merge.
#include <algorithm>
#include <cfloat>

#include "gpu/cuda/device.cuh"

namespace dualpath::gpu::cuda {

namespace {

constexpr int key_tile = 32;      // keys per shared-memory tile: one per lane when scoring
constexpr int attn_warps = 4;     // decode
constexpr int prefill_warps = 8;  // prefill: 8 warps of 2 rows each keep more warps per key tile in flight
constexpr int rows_per_warp = 2;
constexpr int query_tile = rows_per_warp * prefill_warps;
constexpr int max_dims_per_lane = 8;  // head_dim <= 256

// One key tile of a row's online softmax: the running max m and weight sum l take the tile (its max over the
// warp, and this lane's score s where `valid`), the row's sums acc are rescaled to the new max, and this lane's
// weight is returned. Shared by prefill and decode so both round alike.
template <int N>
__device__ __forceinline__ float online_softmax_step(float& m, float& l, float (&acc)[N], float tile_max, float s,
                                                     bool valid) {
  const float m_new = fmaxf(m, tile_max);
  const float p = valid ? expf(s - m_new) : 0.0f;
  const float corr = expf(m - m_new);
  l = l * corr + warp_sum(p);
  for (int e = 0; e < N; ++e) acc[e] *= corr;
  m = m_new;
  return p;
}

// Softmax states of one head, `count` of them `stride` floats apart, each [hd sums][max m][weight sum l],
// merged: the largest m and the weight sum rescaled to it (merge_max_sum), then one dim's sum (merged_dim). A
// state of l = 0 (no keys) takes no part. A decode block's warps and a split decode's chunks merge alike.
struct softmax_merge {
  float m, l;
};
__device__ __forceinline__ softmax_merge merge_max_sum(const float* st, uint32_t count, uint32_t stride, uint32_t hd) {
  softmax_merge g{-FLT_MAX, 0.0f};
  for (uint32_t i = 0; i < count; ++i)
    if (st[i * stride + hd + 1] > 0) g.m = fmaxf(g.m, st[i * stride + hd]);
  for (uint32_t i = 0; i < count; ++i) {
    const float l = st[i * stride + hd + 1];
    if (l > 0) g.l += l * expf(st[i * stride + hd] - g.m);
  }
  return g;
}
__device__ __forceinline__ float merged_dim(const float* st, uint32_t count, uint32_t stride, uint32_t hd, float m,
                                            uint32_t d) {
  float o = 0;
  for (uint32_t i = 0; i < count; ++i)
    if (st[i * stride + hd + 1] > 0) o += st[i * stride + d] * expf(st[i * stride + hd] - m);
  return o;
}

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

// grid (heads / G, items, splits), block attn_warps * 32. A block takes G query heads of one KV head (G divides
// the GQA group), so each key and value it reads serves all G; block z the request's keys [z·chunk,
// (z+1)·chunk). Warp w takes key tiles w, w + warps, ...; lanes score one key each, then own DPL head dims; the
// warps' partial softmax states merge through shared memory. With one split the block writes the output; with
// more it writes each head's state (unnormalised sums, max, sum of weights) to `partial` for
// decode_merge_kernel. Each head sums the same products in the same order whatever G is.
template <int G, int DPL>
__global__ void decode_attention_kernel(const float* qkv, const uint16_t* const* key_ptr, const attn_item* items,
                                        float* partial, float* out, uint32_t heads, uint32_t kv_heads, uint32_t hd,
                                        uint32_t chunk, bool aligned) {
  DP_DYNAMIC_SHARED(float, smem);
  const attn_item it = items[blockIdx.y];
  const uint32_t h0 = blockIdx.x * G, g = h0 / (heads / kv_heads), Q = heads * hd, KV = kv_heads * hd, W = Q + 2 * KV,
                 lane = threadIdx.x % warp, wid = threadIdx.x / warp;
  float* q = smem;           // [G][hd]
  float* part = q + G * hd;  // [warps][G][hd + 2]: acc, m, l
  const float scale = rsqrtf(float(hd));
  for (uint32_t d = threadIdx.x; d < G * hd; d += blockDim.x) q[d] = qkv[uint64_t(it.row0) * W + h0 * hd + d] * scale;
  __syncthreads();
  const uint32_t keys = it.cached + 1, k0 = blockIdx.z * chunk, k1 = min(keys, k0 + chunk);
  // The head dims lane owns: lane, lane + 32, ... or, aligned, adjacent pairs (2·lane, 2·lane + 1), (2·lane + 64,
  // 2·lane + 65), ... so that a value pair is one load. Each dim sums the same products in the same order.
  auto dim_of = [&](int e) {
    return aligned ? 2 * (lane + warp * uint32_t(e / 2)) + uint32_t(e % 2) : lane + e * warp;
  };
  float m[G], l[G], acc[G][DPL];
  for (int h = 0; h < G; ++h) {
    m[h] = -FLT_MAX;
    l[h] = 0;
    for (int e = 0; e < DPL; ++e) acc[h][e] = 0;
  }
  for (uint32_t kt = k0 + wid * key_tile; kt < k1; kt += attn_warps * key_tile) {
    const uint32_t key = kt + lane;
    const uint16_t* p = key < k1 ? key_ptr[it.key_off + key] : nullptr;
    float s[G], pr[G];
    for (int h = 0; h < G; ++h) s[h] = p ? 0.0f : -FLT_MAX;
    if (p && aligned) {  // 8 of the key's values a load
      const bf16x8* k8 = reinterpret_cast<const bf16x8*>(p + g * hd);
      for (uint32_t d8 = 0; d8 < hd / 8; ++d8) {
        const bf16x8 v = k8[d8];
        for (int w = 0; w < 4; ++w)
          for (int h = 0; h < G; ++h) {
            const float* qd = q + h * hd + 8 * d8;
            s[h] += qd[2 * w] * bf16_lo(v.w[w]);
            s[h] += qd[2 * w + 1] * bf16_hi(v.w[w]);
          }
      }
    } else if (p) {
      for (uint32_t d = 0; d < hd; ++d) {
        const float kd = bf16_load(p[g * hd + d]);
        for (int h = 0; h < G; ++h) s[h] += q[h * hd + d] * kd;
      }
    }
    for (int h = 0; h < G; ++h) pr[h] = online_softmax_step(m[h], l[h], acc[h], warp_max(s[h]), s[h], p != nullptr);
    for (int k = 0; k < key_tile; ++k) {
      float pk[G];
      for (int h = 0; h < G; ++h) pk[h] = __shfl_sync(0xffffffffu, pr[h], k);
      const uint16_t* pv =
          reinterpret_cast<const uint16_t*>(__shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(p), k));
      if (!pv) continue;
      for (int e = 0; e < DPL; ++e) {
        const uint32_t d = dim_of(e);
        if (!aligned && d < hd) {
          const float v = bf16_load(pv[KV + g * hd + d]);
          for (int h = 0; h < G; ++h) acc[h][e] += pk[h] * v;
        }
        if (aligned && e % 2 == 0 && d < hd) {  // dims d and d + 1 in one load
          const uint32_t w = *reinterpret_cast<const uint32_t*>(pv + KV + g * hd + d);
          for (int h = 0; h < G; ++h) {
            acc[h][e] += pk[h] * bf16_lo(w);
            acc[h][e + 1] += pk[h] * bf16_hi(w);
          }
        }
      }
    }
  }
  for (int h = 0; h < G; ++h) {
    float* mine = part + (wid * G + h) * (hd + 2);
    for (int e = 0; e < DPL; ++e) {
      const uint32_t d = dim_of(e);
      if (d < hd) mine[d] = acc[h][e];
    }
    if (lane == 0) {
      mine[hd] = m[h];
      mine[hd + 1] = l[h];
    }
  }
  __syncthreads();
  for (int h = 0; h < G; ++h) {
    const uint32_t head = h0 + h;
    const float* warps = part + h * (hd + 2);  // head h's state of each warp, G·(hd + 2) floats apart
    const softmax_merge g = merge_max_sum(warps, attn_warps, G * (hd + 2), hd);
    float* state =
        gridDim.z > 1 ? partial + ((uint64_t(blockIdx.y) * heads + head) * gridDim.z + blockIdx.z) * (hd + 2) : nullptr;
    for (uint32_t d = threadIdx.x; d < hd; d += blockDim.x) {
      const float o = merged_dim(warps, attn_warps, G * (hd + 2), hd, g.m, d);
      if (state) state[d] = o;
      else out[uint64_t(it.row0) * Q + head * hd + d] = o / g.l;
    }
    if (state && threadIdx.x == 0) {
      state[hd] = g.m;
      state[hd + 1] = g.l;  // 0 for a chunk past the request's keys
    }
  }
}

// grid (heads, items), block attn_warps * 32: one (request, head)'s chunk states merged into its output.
__global__ void decode_merge_kernel(const float* partial, const attn_item* items, float* out, uint32_t heads,
                                    uint32_t hd, uint32_t splits) {
  const attn_item it = items[blockIdx.y];
  const uint32_t head = blockIdx.x, Q = heads * hd;
  const float* st = partial + (uint64_t(blockIdx.y) * heads + head) * splits * (hd + 2);
  const softmax_merge g = merge_max_sum(st, splits, hd + 2, hd);
  for (uint32_t d = threadIdx.x; d < hd; d += blockDim.x)
    out[uint64_t(it.row0) * Q + head * hd + d] = merged_dim(st, splits, hd + 2, hd, g.m, d) / g.l;
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

void decode_attention(const float* qkv, const uint16_t* const* key_ptr, const attn_item* items, uint32_t n_items,
                      uint32_t splits, float* partial, float* out, uint32_t heads, uint32_t kv_heads, uint32_t head_dim,
                      bool aligned, bool share_kv, cudaStream_t s) {
  if (!n_items) return;
  splits = std::max<uint32_t>(splits, 1);
  const uint32_t group = heads / kv_heads,
                 G = share_kv && head_dim <= 128 && (group == 2 || group == 4 || group == 8) ? group : 1;
  const size_t shared = (G * head_dim + attn_warps * G * (head_dim + 2)) * sizeof(float);
  const dim3 grid(heads / G, n_items, splits);
  auto launch = [&](auto kernel) {
    DP_LAUNCH(kernel, grid, attn_warps * warp, shared, s)
    (qkv, key_ptr, items, partial, out, heads, kv_heads, head_dim, decode_chunk_keys, aligned);
  };
  const bool narrow = head_dim <= 64;  // two dims a lane cover it, else four (head_dim <= 128)
  if (G == 2) narrow ? launch(decode_attention_kernel<2, 2>) : launch(decode_attention_kernel<2, 4>);
  else if (G == 4) narrow ? launch(decode_attention_kernel<4, 2>) : launch(decode_attention_kernel<4, 4>);
  else if (G == 8) narrow ? launch(decode_attention_kernel<8, 2>) : launch(decode_attention_kernel<8, 4>);
  else launch(decode_attention_kernel<1, max_dims_per_lane>);
  if (splits > 1) DP_LAUNCH(decode_merge_kernel, dim3(heads, n_items), attn_warps * warp, 0, s)
  (partial, items, out, heads, head_dim, splits);
}

}  // namespace dualpath::gpu::cuda
