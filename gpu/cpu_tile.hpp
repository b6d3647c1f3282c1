#pragma once
// The prefill attention's two products over a query tile (cpu_attention.cpp) by kernels of its own, in place of
// two sgemm calls per key block: AVX-512 ones (cpu_tile_avx512.cpp, which says why) or, on a CPU with AVX2 and
// FMA only, AVX2 ones (cpu_tile_avx2.cpp). Both sum each product in one fixed order (a query row's dot product
// over the dimensions in turn, an output over the keys in turn), whatever the tile's size or a row's place in
// it, so a prefill over KV loaded from storage gives the bits of a full prefill of the same tokens; sgemm's
// sums could depend on the call's shape, and on a CPU where it ran these products a served answer sampled at
// temperature 1 came out different from its `serve --verify` recompute (docs/design.md §10).
#include <cstdint>

namespace dualpath::gpu::cpu {

// Rows that tile_scores takes at once and keys it takes at once: callers pad to these.
constexpr uint64_t tile_rows = 8;
constexpr uint64_t tile_keys = 32;

// Whether the kernels below run here for head width hd (32, 64 or 128, and AVX-512F or AVX2 with FMA).
bool tile_kernels_usable(uint32_t hd);

// s[r][j] = scale · (q[r] · k_j) for rows r < rows (a multiple of tile_rows) and keys j < keys (a multiple of
// tile_keys). q rows are hd floats apart; kt holds the keys a group of tile_keys at a time, each group
// [hd][tile_keys] (dimension d of key j at kt[(j / tile_keys · hd + d) · tile_keys + j % tile_keys]): a
// group is one run of memory, where rows of a power-of-two stride would share a few L1 sets.
void tile_scores(const float* q, uint64_t rows, uint32_t hd, const float* kt, uint64_t keys, float scale, float* s,
                 uint64_t s_stride);

// o[r] += Σ_j p[r][j] · v_j for rows r < rows (a multiple of tile_rows) and keys j < keys; v rows are
// v_stride floats apart (best hd: a stride of a power of two larger than that maps the rows a chunk reads
// to a few L1 sets), o rows hd apart.
void tile_values(const float* p, uint64_t p_stride, uint64_t rows, uint64_t keys, const float* v, uint64_t v_stride,
                 uint32_t hd, float* o);

// The same, each width's kernels alone (false where they do not run here), for tests and benchmarks.
bool tile_scores_avx512(const float* q, uint64_t rows, uint32_t hd, const float* kt, uint64_t keys, float scale,
                        float* s, uint64_t s_stride);
bool tile_values_avx512(const float* p, uint64_t p_stride, uint64_t rows, uint64_t keys, const float* v,
                        uint64_t v_stride, uint32_t hd, float* o);
bool tile_scores_avx2(const float* q, uint64_t rows, uint32_t hd, const float* kt, uint64_t keys, float scale, float* s,
                      uint64_t s_stride);
bool tile_values_avx2(const float* p, uint64_t p_stride, uint64_t rows, uint64_t keys, const float* v,
                      uint64_t v_stride, uint32_t hd, float* o);

}  // namespace dualpath::gpu::cpu
