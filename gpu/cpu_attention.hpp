#pragma once
// Attention of the cpu backend (§10): every request's new tokens over its cached and new KV, causal, GQA.
// The work is cut into independent tasks — runs of key chunks for decode-sized requests, one per (KV head,
// query tile) otherwise — and spread over the engine's cpu_team, each task with single-threaded GEMMs.
#include <cstdint>
#include <vector>

#include "core/model_catalog.hpp"
#include "gpu/backend.hpp"
#include "gpu/cpu_kernels.hpp"
#include "gpu/cpu_team.hpp"

namespace dualpath::gpu {

struct attention_request {
  uint64_t row0 = 0;           // row of its first new token in the batch
  uint64_t n = 0;              // new tokens (positions cached .. cached + n - 1)
  uint64_t cached = 0;         // tokens before them
  std::vector<kv_span> spans;  // KV of all cached + n tokens, the new tokens' last
};

class cpu_attention {
 public:
  cpu_attention(const model_spec& m, cpu_team& team);

  // attn[row][0, Q) = softmax(scale · q·Kᵀ, causal) · V for every new token's query heads; qkv rows are
  // [Q | K | V] with RoPE applied; the K and V of each request are read from its spans (bf16).
  void run(const float* qkv, float* attn, const std::vector<attention_request>& requests);

 private:
  struct scratch {
    std::vector<float> q, o, s, max, sum, rescale;
    std::vector<uint32_t> valid, block_valid;
  };
  // The decode-sized requests of a run and their chunks (cpu_attention.cpp, chunk_keys).
  struct small_request {
    const attention_request* r;
    size_t first, chunks;  // its chunks in chunks_
    bool split;            // over more than one task: merged after them
  };
  struct chunk {
    size_t request;  // in small_
    uint64_t k0, k1;
  };
  void direct(const float* qkv, float* attn, size_t c0, size_t c1, scratch& w);
  void merge(const small_request& q, float* attn) const;
  uint64_t head_of(uint64_t i, uint64_t n) const;
  void tile(const float* qkv, float* attn, const attention_request& r, uint32_t g, uint64_t t0, scratch& w) const;
  void gather(const attention_request& r, bool parallel);

  const model_spec& m_;
  cpu_team& team_;
  std::vector<scratch> scratch_;  // one per team member
  std::vector<small_request> small_;
  std::vector<chunk> chunks_;
  // Each chunk's softmax before normalization, rows [head][token] up to direct_max_queries tokens: values, max, sum.
  std::vector<float> part_o_, part_max_, part_sum_;
  const bool tile_kernels_;         // the tile kernels run here (cpu_tile.hpp)
  const cpu::ask_split ask_split_;  // how the decode passes and the softmax between them ask for rows ahead
  // fp32 K and V of the request being tiled, per KV head: K key_stride_ keys each (ctx rounded up to the
  // kernels' key group), as [key][dimension] for sgemm or in the tile kernels' key groups; V [ctx][dimension].
  std::vector<float> kf_, vf_;
  uint64_t key_stride_ = 0;
};

}  // namespace dualpath::gpu
