#pragma once
// Device kernels of the cuda backend, behind plain host launchers (all asynchronous on `stream`).
// Activations are fp32, GEMM inputs bf16 (raw uint16_t), KV bf16 rows [K heads | V heads] per token.
// Tests also build these sources as host code over a SIMT emulator (DUALPATH_SIMT_EMULATION, tests/gpu/), which
// supplies the CUDA vocabulary itself.
#ifndef DUALPATH_SIMT_EMULATION
#include <cuda_runtime.h>
#endif

#include <cstdint>

namespace dualpath::gpu::cuda {

// Per request of a batch: its rows in the activation buffers and where its keys are listed.
struct attn_item {
  uint32_t row0;     // first row (new token) of this request
  uint32_t n;        // new tokens
  uint32_t cached;   // tokens before them; keys 0..cached+n-1 are listed in key_ptr[key_off ...]
  uint32_t key_off;  // offset of this request's per-token KV row pointers in the key table
};

// Consecutive KV rows of one span: key `first + t` is at base + t · row_elems for t < tokens.
struct kv_run {
  const uint16_t* base;
  uint32_t tokens;
  uint32_t first;
};

// key_ptr[run.first + t] = run.base + t · row_elems for every run: the per-key table the attention kernels read.
void expand_key_table(const kv_run* runs, uint32_t n_runs, const uint16_t** key_ptr, uint32_t row_elems,
                      cudaStream_t s);

// x[r] = embed[tokens[r]] (bf16 table -> fp32)
void embed(const uint16_t* table, const int32_t* tokens, float* x, uint32_t rows, uint32_t hidden, cudaStream_t s);

// out[r] = bf16(x[r] / rms(x[r]) * w)   (rows of `dim`)
void rmsnorm_bf16(const float* x, const float* w, uint16_t* out, uint32_t rows, uint32_t dim, float eps,
                  cudaStream_t s);

// qkv[r] += bias; rotary embedding on the q and k heads at pos[r]; the k and v parts are rounded to bf16,
// written to kv_out[r] (one KV row) and written back rounded into qkv so attention sees the stored values.
void bias_rope_store(float* qkv, const float* bias, const uint32_t* pos, uint16_t* kv_out, uint32_t rows,
                     uint32_t heads, uint32_t kv_heads, uint32_t head_dim, double theta, cudaStream_t s);

// Flash-style prefill attention: per (request, head, tile of query rows), online softmax over key tiles
// read through the per-token row pointers (paged), causal over the new tokens. `aligned` as for decode.
void prefill_attention(const float* qkv, const uint16_t* const* key_ptr, const attn_item* items, uint32_t n_items,
                       uint32_t max_new, float* out, uint32_t heads, uint32_t kv_heads, uint32_t head_dim, bool aligned,
                       cudaStream_t s);

// Paged decode attention (one new token per request), split over the keys as well as (request, head): a
// request's keys are cut into chunks (decode_chunk_keys), each chunk one block whose warps split it further,
// and a second kernel merges the chunks' states. The chunking depends on a request's own length only, so a
// request decodes to the same bits alone or in any batch. A decode step of a few requests has too few
// (request, head) pairs to keep a GPU's multiprocessors busy reading KV without it; a long request has keys
// enough to fill them with larger chunks, which cost fewer merges per key.
#ifdef __CUDACC__
#define DP_HOST_DEVICE __host__ __device__
#else
#define DP_HOST_DEVICE
#endif
DP_HOST_DEVICE inline uint32_t decode_chunk_keys(uint32_t keys) { return keys > 8192 ? 1024 : 256; }
inline uint32_t decode_splits(uint32_t keys) {
  const uint32_t chunk = decode_chunk_keys(keys);
  return (keys + chunk - 1) / chunk;
}
// Scratch floats the chunks' states need when splits > 1: [items][heads][splits][head_dim + 2].
inline uint64_t decode_partial_floats(uint32_t n_items, uint32_t heads, uint32_t head_dim, uint32_t splits) {
  return uint64_t(n_items) * heads * splits * (head_dim + 2);
}
// `aligned`: every key row starts on 16 bytes and head_dim is a multiple of 8, so keys load 8 values at a time.
// `share_kv`: one block takes all query heads of a KV head (GQA groups of 2, 4 or 8, head_dim <= 128), so each
// KV row is read once for the group rather than once per query head; the results are the same bits.
void decode_attention(const float* qkv, const uint16_t* const* key_ptr, const attn_item* items, uint32_t n_items,
                      uint32_t splits, float* partial, float* out, uint32_t heads, uint32_t kv_heads, uint32_t head_dim,
                      bool aligned, bool share_kv, cudaStream_t s);

// out[r] = bf16(silu(gu[r][:I]) * gu[r][I:])
void silu_mul_bf16(const float* gu, uint16_t* out, uint32_t rows, uint32_t inter, cudaStream_t s);

void to_bf16(const float* in, uint16_t* out, uint64_t n, cudaStream_t s);
void f32_to_bf16_weights(const float* in, uint16_t* out, uint64_t n, cudaStream_t s);

// out[e] = x[rows[e]]
void gather_rows(const float* x, const uint32_t* rows, float* out, uint32_t n, uint32_t dim, cudaStream_t s);

}  // namespace dualpath::gpu::cuda
