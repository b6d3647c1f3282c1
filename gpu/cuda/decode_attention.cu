// The decode attention kernels of the cuda backend (kernels.cuh): split over key chunks, a block per KV head
// serving its GQA group, K/V tiles staged in shared memory, and the merge of the chunks.
#include <algorithm>

#include "gpu/cuda/attention.cuh"

namespace dualpath::gpu::cuda {

namespace {

constexpr int merge_threads = 128;  // decode_merge_kernel

// A decode warp's key tile in shared memory: key_tile rows of `staged_row` bf16, the key's K values at [0, hd8),
// its V values at [hd8, 2·hd8) (hd8: head_dim rounded up to 8), then 8 of padding so that lanes reading
// different rows 16 bytes at a time fall on different banks.
__host__ __device__ inline uint32_t staged_row(uint32_t hd) { return 2 * ((hd + 7) / 8 * 8) + 8; }
// Floats of a decode block's shared memory before its tiles (q and the warps' states), kept to 16 bytes.
__host__ __device__ inline uint32_t decode_state_floats(uint32_t G, uint32_t hd, uint32_t warps) {
  return (G * hd + warps * G * (hd + 2) + 3) / 4 * 4;
}

// Warps of a decode block: as many as keep a tile of each in about 70 KB of shared memory (three blocks a
// multiprocessor). A function of head_dim alone, as the warps' order of merging is part of the result's bits.
inline uint32_t decode_warps(uint32_t hd) { return hd <= 64 ? 8 : hd <= 128 ? 4 : 2; }

// grid (heads / G, items, splits), block decode_warps(head_dim) * 32. A block takes G query heads of one KV head (G
// divides the GQA group), so each key and value it reads serves all G; block z the request's keys [z·chunk,
// (z+1)·chunk), chunk = decode_chunk_keys(its keys). Warp w takes key tiles w, w + warps, ...; it copies each tile's
// K and V rows into its own shared memory, asynchronously where `aligned` (rows on 16 bytes, head_dim a multiple of
// 8), `stages` tiles at a time: with two, one tile's loads are in flight while the other is scored; with one (where
// two would not fit beside two more blocks), the other warps and blocks of the multiprocessor overlap them, and the
// first tiles are on their way while the query is read. Lanes score one key each; for the values the lanes are
// `groups` groups of `pieces` lanes, a group reading whole value rows, 8 dims a lane, and taking the tile's keys j,
// j + groups, ...; each group keeps its own sums, folded in group order when the warp is done. The warps' partial
// softmax states then merge through shared memory. With one split the block writes the output; with more it writes
// each head's state (unnormalised sums, max, sum of weights) to `partial` for decode_merge_kernel. Each head sums
// the same products in the same order whatever G is and however its rows were copied, so a request decodes to the
// same bits wherever its KV sits.
template <int G>
__global__ void decode_attention_kernel(const float* qkv, const uint16_t* const* key_ptr, const attn_item* items,
                                        float* partial, float* out, uint32_t heads, uint32_t kv_heads, uint32_t hd,
                                        uint32_t stages, bool aligned) {
  DP_DYNAMIC_SHARED(float, smem);
  const attn_item it = items[blockIdx.y];
  const uint32_t h0 = blockIdx.x * G, g = h0 / (heads / kv_heads), Q = heads * hd, KV = kv_heads * hd, W = Q + 2 * KV,
                 lane = threadIdx.x % warp, wid = threadIdx.x / warp, warps = blockDim.x / warp;
  const uint32_t hd8 = (hd + 7) / 8 * 8, stride = staged_row(hd), pieces = hd8 / 8, groups = warp / pieces,
                 j = lane / pieces, d0 = 8 * (lane % pieces);  // this lane's value dims d0 .. d0 + 7 (< hd)
  float* q = smem;                                             // [G][hd]
  float* part = q + G * hd;                                    // [warps][G][hd + 2]: acc, m, l
  uint16_t* tiles = reinterpret_cast<uint16_t*>(smem + decode_state_floats(G, hd, warps)) +
                    uint64_t(wid) * stages * key_tile * stride;  // this warp's [stages][key_tile][stride]
  const uint32_t keys = it.cached + 1, chunk = decode_chunk_keys(keys), k0 = blockIdx.z * chunk,
                 k1 = min(keys, k0 + chunk);
  // Copies piece pc (K pieces first, then V) of `row` to `dst_row`.
  auto copy_piece = [&](uint16_t* dst_row, const uint16_t* row, uint32_t pc) {
    const uint32_t v = pc >= pieces, c = pc - v * pieces;
    const uint16_t* src = row + v * KV + g * hd + 8 * c;
    uint16_t* dst = dst_row + v * hd8 + 8 * c;
    if (aligned) {
      __pipeline_memcpy_async(dst, src, 16);
    } else {
      for (uint32_t e = 0; e < 8; ++e) dst[e] = 8 * c + e < hd ? src[e] : 0;
    }
  };
  const uint32_t per_row = 2 * pieces, dr = warp / per_row, dp = warp % per_row;
  // Copies the K and V rows of the tile at key kt into buffer b: lane by lane 8 values of a row, consecutive
  // lanes on consecutive pieces of the same row (coalesced), the row's address from the lane that read it.
  auto stage = [&](uint32_t kt, uint32_t b) {
    uint16_t* buf = tiles + uint64_t(b) * key_tile * stride;
    const uint16_t* p = kt + lane < k1 ? key_ptr[it.key_off + kt + lane] : nullptr;
    // Lane takes pieces lane, lane + 32, ... of the tile's key_tile · per_row: row r (< key_tile), piece pc.
    uint32_t r = lane / per_row, pc = lane % per_row;
    for (uint32_t i = 0; i < per_row; ++i) {
      const auto* row =
          reinterpret_cast<const uint16_t*>(__shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(p), r));
      if (row) copy_piece(buf + r * stride, row, pc);
      r += dr;
      pc += dp;
      if (pc >= per_row) pc -= per_row, ++r;
    }
    __pipeline_commit();
  };
  float m[G], l[G], acc[G][8];
  for (int h = 0; h < G; ++h) {
    m[h] = -FLT_MAX;
    l[h] = 0;
    for (int e = 0; e < 8; ++e) acc[h][e] = 0;
  }
  const uint32_t first = k0 + wid * key_tile, step = warps * key_tile,
                 n = first < k1 ? (k1 - first + step - 1) / step : 0;  // this warp's tiles
  for (uint32_t i = 0; i < min(n, stages); ++i) stage(first + i * step, i);
  // The query is read while the first tiles are on their way.
  const float scale = rsqrtf(float(hd));
  for (uint32_t d = threadIdx.x; d < G * hd; d += blockDim.x) q[d] = qkv[uint64_t(it.row0) * W + h0 * hd + d] * scale;
  __syncthreads();
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t kt = first + i * step;
    __pipeline_wait_prior(min(n - 1 - i, stages - 1));  // tile i has landed; later ones may be in flight
    __syncwarp();
    const uint16_t* buf = tiles + uint64_t(i % stages) * key_tile * stride;
    const bool valid = kt + lane < k1;
    float s[G], pr[G];
    for (int h = 0; h < G; ++h) s[h] = valid ? 0.0f : -FLT_MAX;
    if (valid && hd % 8 == 0) {  // whole pieces: q four dims a load, no edge to test
      const bf16x8* k8 = reinterpret_cast<const bf16x8*>(buf + lane * stride);
      for (uint32_t d8 = 0; d8 < pieces; ++d8) {
        const bf16x8 v = k8[d8];
#pragma unroll
        for (int h = 0; h < G; ++h) {
          const float4 a = reinterpret_cast<const float4*>(q + h * hd + 8 * d8)[0];
          const float4 b = reinterpret_cast<const float4*>(q + h * hd + 8 * d8)[1];
          s[h] += a.x * bf16_lo(v.w[0]);
          s[h] += a.y * bf16_hi(v.w[0]);
          s[h] += a.z * bf16_lo(v.w[1]);
          s[h] += a.w * bf16_hi(v.w[1]);
          s[h] += b.x * bf16_lo(v.w[2]);
          s[h] += b.y * bf16_hi(v.w[2]);
          s[h] += b.z * bf16_lo(v.w[3]);
          s[h] += b.w * bf16_hi(v.w[3]);
        }
      }
    } else if (valid) {
      const uint16_t* kr = buf + lane * stride;
      for (uint32_t d = 0; d < hd; ++d)
        for (int h = 0; h < G; ++h) s[h] += q[h * hd + d] * bf16_load(kr[d]);
    }
    for (int h = 0; h < G; ++h) pr[h] = online_softmax_step(m[h], l[h], acc[h], warp_max(s[h]), s[h], valid);
    for (uint32_t k = j; k < j + key_tile; k += groups) {  // this group's keys: the trip count is the warp's
      float pk[G];
      for (int h = 0; h < G; ++h) pk[h] = __shfl_sync(0xffffffffu, pr[h], k % warp);
      if (j >= groups || k >= key_tile || kt + k >= k1) continue;
      const bf16x8 v = *reinterpret_cast<const bf16x8*>(buf + k * stride + hd8 + d0);
#pragma unroll
      for (int w = 0; w < 4; ++w)
#pragma unroll
        for (int h = 0; h < G; ++h) {
          acc[h][2 * w] += pk[h] * bf16_lo(v.w[w]);
          acc[h][2 * w + 1] += pk[h] * bf16_hi(v.w[w]);
        }
    }
    if (i + stages < n) {
      __syncwarp();  // every lane is done with the buffer before it is refilled
      stage(first + (i + stages) * step, i % stages);
    }
  }
  // The groups' sums folded in group order: group 0's lanes end with the warp's sums of their dims.
#pragma unroll
  for (int h = 0; h < G; ++h)
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      float sum = acc[h][e];
      for (uint32_t o = 1; o < groups; ++o) {
        const float other = __shfl_sync(0xffffffffu, acc[h][e], (o * pieces + lane % pieces) % warp);
        if (j == 0) sum += other;
      }
      acc[h][e] = sum;
    }
  for (int h = 0; h < G; ++h) {
    float* mine = part + (wid * G + h) * (hd + 2);
    if (j == 0)
      for (int e = 0; e < 8; ++e)
        if (d0 + e < hd) mine[d0 + e] = acc[h][e];
    if (lane == 0) {
      mine[hd] = m[h];
      mine[hd + 1] = l[h];
    }
  }
  __syncthreads();
  for (int h = 0; h < G; ++h) {
    const uint32_t head = h0 + h;
    const float* states = part + h * (hd + 2);  // head h's state of each warp, G·(hd + 2) floats apart
    const softmax_merge g = merge_max_sum(states, warps, G * (hd + 2), hd);
    float* state =
        gridDim.z > 1 ? partial + ((uint64_t(blockIdx.y) * heads + head) * gridDim.z + blockIdx.z) * (hd + 2) : nullptr;
    for (uint32_t d = threadIdx.x; d < hd; d += blockDim.x) {
      const float o = merged_dim(states, warps, G * (hd + 2), hd, g.m, d);
      if (state) state[d] = o;
      else out[uint64_t(it.row0) * Q + head * hd + d] = o / g.l;
    }
    if (state && threadIdx.x == 0) {
      state[hd] = g.m;
      state[hd + 1] = g.l;  // 0 for a chunk past the request's keys
    }
  }
}

// grid (heads, items), block merge_threads: one (request, head)'s chunk states merged into its output.
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

void decode_attention(const float* qkv, const uint16_t* const* key_ptr, const attn_item* items, uint32_t n_items,
                      uint32_t splits, float* partial, float* out, uint32_t heads, uint32_t kv_heads, uint32_t head_dim,
                      bool aligned, bool share_kv, cudaStream_t s) {
  if (!n_items) return;
  splits = std::max<uint32_t>(splits, 1);
  const uint32_t group = heads / kv_heads,
                 G = share_kv && head_dim <= 128 && (group == 2 || group == 4 || group == 8) ? group : 1;
  // Two tiles a warp in flight where they fit beside two more blocks on a multiprocessor, else one.
  const uint32_t warps = decode_warps(head_dim);
  const size_t tile_bytes = size_t(warps) * key_tile * staged_row(head_dim) * sizeof(uint16_t);
  const uint32_t stages = 2 * tile_bytes <= 80 * 1024 ? 2 : 1;
  const size_t shared = decode_state_floats(G, head_dim, warps) * sizeof(float) + stages * tile_bytes;
  const dim3 grid(heads / G, n_items, splits);
  auto launch = [&](auto kernel) {
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared));
    DP_LAUNCH(kernel, grid, warps * warp, shared, s)
    (qkv, key_ptr, items, partial, out, heads, kv_heads, head_dim, stages, aligned);
  };
  if (G == 2) launch(decode_attention_kernel<2>);
  else if (G == 4) launch(decode_attention_kernel<4>);
  else if (G == 8) launch(decode_attention_kernel<8>);
  else launch(decode_attention_kernel<1>);
  if (splits > 1) DP_LAUNCH(decode_merge_kernel, dim3(heads, n_items), merge_threads, 0, s)
  (partial, items, out, heads, head_dim, splits);
}

}  // namespace dualpath::gpu::cuda
