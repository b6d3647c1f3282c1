#pragma once
// How the decode attention's vector kernels (cpu_bf16_avx512.cpp, cpu_bf16_avx2.cpp) walk bf16 KV rows and
// ask for them ahead of time. Both widths read the same rows in the same order, so they share the distances
// and the split of the asking below (docs/design.md §10, cpu backend; docs/experiments.md, "Limits").
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "gpu/cpu_kernels.hpp"

namespace dualpath::gpu::cpu::rows {

// Tokens whose dot products are summed across lanes together (one 8-lane result).
constexpr uint32_t token_group = 8;
// Rows are read a slice at a time at a large stride, which the hardware prefetcher does not follow far
// enough; a row this many tokens on is asked for while the current one is used.
constexpr uint32_t prefetch_ahead = 16;
// Tokens per block of the value pass: a block's rows stay in L1/L2 while each head takes its slice of them.
constexpr uint32_t value_block = 64;
// Both passes ask for the rows rows_ahead_keys tokens on (the caller's next block of 64, which the caller
// names: in a decode engine's pages it is in another span) into L2 while they work on rows already in cache,
// so that the next block's keys and values are there when needed. Each core's misses in flight bound this (the
// prefetches wait for a free fill buffer), so the asking is spread as thinly as it goes: the key pass asks for
// the first half of a row's lines, the value pass for the second, and within a pass each KV head for its share.
// When the value pass alone asked for whole rows, a decode step (small, 8 × 4K) took 18.8–19.2 ms on one thread
// and 10.2–11.6 on two; with the asking split over both passes 14.9–15.0 and 8.5–9.9 (interleaved runs;
// docs/experiments.md). 32 or 128 tokens ahead were within the noise of 64.

// Bytes [begin, end) of every row ahead that one KV head's pass asks for.
struct row_share {
  uint64_t begin = 0, end = 0;
};

// The passes of a block, each asking for its half of the lines of every row ahead.
enum class pass { keys, values };

// KV head g's share (of `heads`) of the lines of a `stride`-byte row that pass p asks for: the first half of
// the row's lines for the key pass, the rest for the value pass.
inline row_share share_of(pass p, uint64_t stride, uint32_t g, uint32_t heads) {
  const uint64_t lines = (stride + 63) / 64, first = p == pass::keys ? 0 : lines / 2,
                 n = (p == pass::keys ? lines / 2 : lines) - first;
  return {(first + n * g / heads) * 64, (first + n * (g + 1) / heads) * 64};
}

// The share of the row that follows row t by rows_ahead_keys keys (row t of `ahead`, if it exists), into L2.
inline void prefetch_far_row(rows_ahead ahead, uint64_t stride, uint64_t t, row_share share) {
  if (share.begin >= share.end || t >= ahead.count) return;
  const auto* far = reinterpret_cast<const char*>(ahead.rows + t * stride);
  for (uint64_t b = share.begin; b < share.end; b += 64) __builtin_prefetch(far + b, 0, 1);
}

// Element `off` of row t.
inline const uint16_t* row(const std::byte* base, uint64_t stride, uint32_t t, uint64_t off) {
  return reinterpret_cast<const uint16_t*>(base + t * stride) + off;
}

// The lines of `elements` bf16 values from p, into L1.
inline void prefetch(const uint16_t* p, uint32_t elements) {
  const auto* c = reinterpret_cast<const char*>(p);
  for (uint32_t b = 0; b < elements * 2; b += 64) __builtin_prefetch(c + b);
}

// The key pass's walk, the same at every width: tokens token_group at a time, each KV head, its query rows R at
// a time and then one at a time, as rows(std::integral_constant<int, R or 1>, g, r0, t0, n, near, far). The
// first call of a token group asks for the rows near (head 0: `width` elements of every key) and each head's
// first call for its share of the rows far ahead; the other calls ask for none.
template <int R, class Rows>
void walk_keys(uint32_t kv_heads, uint64_t rq, uint32_t tokens, uint64_t stride, uint32_t width, Rows&& rows) {
  for (uint32_t t0 = 0; t0 < tokens; t0 += token_group) {
    const uint32_t n = std::min(token_group, tokens - t0);
    for (uint32_t g = 0; g < kv_heads; ++g) {
      const row_share far = share_of(pass::keys, stride, g, kv_heads);
      for (uint64_t r0 = 0; r0 < rq;) {
        const uint32_t near = g == 0 && r0 == 0 ? width : 0;
        const row_share ask = r0 == 0 ? far : row_share{};
        if (r0 + R <= rq) {
          rows(std::integral_constant<int, R>{}, g, r0, t0, n, near, ask);
          r0 += R;
        } else {
          rows(std::integral_constant<int, 1>{}, g, r0, t0, n, near, ask);
          ++r0;
        }
      }
    }
  }
}

// The value pass's walk: tokens value_block at a time, each KV head, its output dimensions `cols` at a time
// (all hd of them where the registers hold a whole row), its rows R at a time and then one at a time, as
// rows(std::integral_constant<int, R or 1>, g, r0, c0, t0, t1, far). Each head's first call asks for its share of
// the rows far ahead; the others, none.
template <int R, class Rows>
void walk_values(uint32_t kv_heads, uint64_t rq, uint32_t tokens, uint64_t stride, uint32_t hd, uint32_t cols,
                 Rows&& rows) {
  for (uint32_t t0 = 0; t0 < tokens; t0 += value_block) {
    const uint32_t t1 = std::min(tokens, t0 + value_block);
    for (uint32_t g = 0; g < kv_heads; ++g) {
      const row_share far = share_of(pass::values, stride, g, kv_heads);
      for (uint32_t c0 = 0; c0 < hd; c0 += cols)
        for (uint64_t r0 = 0; r0 < rq;) {
          const row_share ask = c0 == 0 && r0 == 0 ? far : row_share{};
          if (r0 + R <= rq) {
            rows(std::integral_constant<int, R>{}, g, r0, c0, t0, t1, ask);
            r0 += R;
          } else {
            rows(std::integral_constant<int, 1>{}, g, r0, c0, t0, t1, ask);
            ++r0;
          }
        }
    }
  }
}

}  // namespace dualpath::gpu::cpu::rows
