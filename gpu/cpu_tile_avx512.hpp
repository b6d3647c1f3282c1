#pragma once
// AVX-512 products of the prefill attention's query tiles (cpu_attention.cpp), in place of two sgemm calls
// per key block. At a head width of 64 both of those are thin: sgemm copies (packs) the whole score block
// and the key or value block on every call, about as many floats as the 64-deep product then reads, and
// that packing was a tenth of a prefill pass. Here nothing is copied per call: keys are kept transposed per
// KV head (the gather writes them so, once per request and layer), so a key block's scores are a vector
// load of 16 keys times a broadcast query element; and values are read in their rows, a vector of 16 of a
// value's dimensions times a broadcast probability. They return false on a CPU without AVX-512F or a head
// width that is not a multiple of 16 (at most 128), leaving the work to sgemm. docs/design.md §10.
#include <cstdint>

namespace dualpath::gpu::cpu {

// Rows that tile_scores_avx512 takes at once and keys it takes at once: callers pad to these.
constexpr uint64_t tile_rows = 8;
constexpr uint64_t tile_keys = 32;

// Whether the kernels below run here for head width hd.
bool tile_kernels_usable(uint32_t hd);

// s[r][j] = scale · (q[r] · k_j) for rows r < rows (a multiple of tile_rows) and keys j < keys (a multiple of
// tile_keys). q rows are hd floats apart; kt holds the keys a group of tile_keys at a time, each group
// [hd][tile_keys] (dimension d of key j at kt[(j / tile_keys · hd + d) · tile_keys + j % tile_keys]): a
// group is one run of memory, where rows of a power-of-two stride would share a few L1 sets.
void tile_scores_avx512(const float* q, uint64_t rows, uint32_t hd, const float* kt, uint64_t keys, float scale,
                        float* s, uint64_t s_stride);

// o[r] += Σ_j p[r][j] · v_j for rows r < rows (a multiple of tile_rows) and keys j < keys; v rows are
// v_stride floats apart (best hd: a stride of a power of two larger than that maps the rows a chunk reads
// to a few L1 sets), o rows hd apart.
void tile_values_avx512(const float* p, uint64_t p_stride, uint64_t rows, uint64_t keys, const float* v,
                        uint64_t v_stride, uint32_t hd, float* o);

}  // namespace dualpath::gpu::cpu
