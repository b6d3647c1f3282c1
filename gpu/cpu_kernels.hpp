#pragma once
// Elementwise and row kernels of the cpu backend (the GEMMs go to OpenBLAS). Written as plain loops the
// compiler vectorises; hot ones are built for AVX2 and baseline x86-64 and picked at run time.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dualpath::gpu::cpu {

// out[r] = x[r] / rms(x[r]) * w, for `rows` rows of `dim`.
void rmsnorm(const float* x, const float* w, float* out, uint64_t rows, uint32_t dim, float eps);

// Rotary embedding (rotate-half convention) of `heads` heads per row, in place. Row r has position pos[r].
void rope(float* x, uint64_t rows, uint64_t row_stride, uint32_t heads, uint32_t head_dim, const uint32_t* pos,
          double theta);

// The rotary angles' cosines and sines of `rows` positions, head_dim / 2 of each a row. They depend on the
// position alone, so a batch computes them once for all its layers and for the query and key heads alike:
// recomputed per call (two calls a layer, in double), they were a quarter of a decode step's row kernels.
struct rope_angles {
  uint32_t half = 0;
  std::vector<float> cos, sin;  // [rows][half]
};
rope_angles rope_table(const uint32_t* pos, uint64_t rows, uint32_t head_dim, double theta);

// rope() with the angles of rows [row0, row0 + rows) of `a`; the same values bit for bit.
void rope(float* x, uint64_t rows, uint64_t row_stride, uint32_t heads, const rope_angles& a, uint64_t row0);

// One block of an online softmax (keys taken a block at a time so the scores stay in cache): row r sees
// the block's first valid[r] columns (clamped to cols). max[r] and sum[r] carry the running maximum and
// sum of exponentials over earlier blocks (start at -inf and 0); s[r][j] becomes exp(s[r][j] - new max)
// (0 beyond valid) and rescale[r] = exp(old max - new max), by which the caller scales what it already
// summed with the old maximum.
void online_exp(float* s, uint64_t rows, uint64_t cols, const uint32_t* valid, float* max, float* sum, float* rescale);

// gu[r] = [gate(I) | up(I)]  ->  out[r] = silu(gate) * up.
void silu_mul(const float* gu, float* out, uint64_t rows, uint32_t inter);

void bf16_to_f32(const uint16_t* in, float* out, uint64_t n);
void f32_to_bf16(const float* in, uint16_t* out, uint64_t n);

// The KV rows a decode-style pass reads next, rows_ahead_keys (64) keys after a call's: row t of the call's is
// followed by row t of these, for t < count. The caller's next block of keys may sit in another span (a decode
// engine's KV is a page per Full Block): a call asks for these rows while it works, wherever they are.
constexpr uint32_t rows_ahead_keys = 64;
struct rows_ahead {
  const std::byte* rows = nullptr;
  uint32_t count = 0;
};

// How a block's passes share the asking for the rows ahead, in percent of those rows: the key pass asks the
// first key_percent, the softmax between the passes the next softmax_percent, the value pass the rest. Each
// width's kernels measure their own (cpu_bf16_rows.hpp says why the shares follow time, not bytes).
struct ask_split {
  uint32_t key_percent = 50;
  uint32_t softmax_percent = 0;
};
// The split of the kernels that run bf16_scores and bf16_weighted_values for heads of width hd on this CPU (the
// portable passes ask for nothing ahead).
ask_split bf16_ask_split(uint32_t hd);

// Decode-style attention straight over bf16 KV rows (no fp32 gather), one pass over each row for all KV heads.
// `base` points at `tokens` KV rows of `stride` bytes; at element offset `off` each row holds kv_heads
// consecutive hd-wide keys (or values). Query rows are packed [kv_heads][rq][hd] (rq rows per KV head);
// scores are [kv_heads * rq][ctx] with this span's tokens at columns j0.., hd * kv_heads <= 8192.
// scores: s[(g * rq + row) * ctx + j0 + t] = scale * dot(qg[g][row], key_t[g])
void bf16_scores(const float* qg, uint32_t kv_heads, uint64_t rq, uint32_t hd, const std::byte* base, uint32_t tokens,
                 uint64_t stride, uint64_t off, float scale, float* s, uint64_t ctx, uint64_t j0, rows_ahead ahead);
// values: og[g][row] += s[(g * rq + row) * ctx + j0 + t] * value_t[g]. In both, `ahead` are the rows the caller
// reads next (none: {}), asked for ahead of time.
void bf16_weighted_values(const float* s, uint32_t kv_heads, uint64_t rq, uint64_t ctx, uint64_t j0,
                          const std::byte* base, uint32_t tokens, uint64_t stride, uint64_t off, uint32_t hd, float* og,
                          rows_ahead ahead);

}  // namespace dualpath::gpu::cpu
