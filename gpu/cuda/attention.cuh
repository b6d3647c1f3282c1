#pragma once
// What the prefill and decode attention kernels share (attention.cu, decode_attention.cu): the key tile, one
// tile's online-softmax step and the merge of softmax states, so both round alike.
#include <cfloat>

#include "gpu/cuda/device.cuh"

namespace dualpath::gpu::cuda {

namespace {

constexpr int key_tile = 32;  // keys per tile: one per lane when scoring

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

}  // namespace

}  // namespace dualpath::gpu::cuda
