#pragma once
// How the decode attention's vector kernels (cpu_bf16_avx512.cpp, cpu_bf16_avx2.cpp) walk bf16 KV rows and
// ask for them ahead of time. Both widths read the same rows in the same order, so they share the distances
// and the split of the asking below (docs/design.md §10, cpu backend; docs/experiments.md, "Limits").
#include <cstddef>
#include <cstdint>
#include <type_traits>

// Put before each loop over an array of vector registers (accumulators, a row's vectors): such a loop is
// unrolled whole. Without it GCC 12 kept those arrays in memory as well as in registers and stored every one
// of them to the stack on each pass of the loop around (12 stores a key in the AVX2 tile's value product, which
// ran at two thirds of sgemm's speed; with it, as fast as sgemm: docs/experiments.md).
#define DUALPATH_UNROLL _Pragma("GCC unroll 16")

namespace dualpath::gpu::cpu::rows {

// Tokens whose dot products are summed across lanes together (one 8-lane result).
constexpr uint32_t token_group = 8;
// Rows are read a slice at a time at a large stride, which the hardware prefetcher does not follow far
// enough; a row this many tokens on is asked for while the current one is used.
constexpr uint32_t prefetch_ahead = 16;
// Tokens per block of the value pass: a block's rows stay in L1/L2 while each head takes its slice of them.
constexpr uint32_t value_block = 64;
// Both passes ask for the rows this many tokens on (the caller's next block of 64) into L2 while they work on
// rows already in cache, so that the next block's keys and values are there when needed. Each core's misses
// in flight bound this (the prefetches wait for a free fill buffer), so the asking is spread as thinly as it
// goes: the key pass asks for the first half of a row's lines, the value pass for the second, and within a pass
// each KV head for its share. When the value pass alone asked for whole rows, a decode step (small, 8 × 4K)
// took 18.8–19.2 ms on one thread and 10.2–11.6 on two; with the asking split over both passes 14.9–15.0 and
// 8.5–9.9 (interleaved runs; docs/experiments.md). 32 or 128 tokens ahead were within the noise of 64.
constexpr uint32_t prefetch_far = 64;

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

// The share of row t + prefetch_far, into L2, if that row exists (`readable` rows from base).
inline void prefetch_far_row(const std::byte* base, uint64_t stride, uint64_t t, row_share share, uint32_t readable) {
  if (share.begin >= share.end || t + prefetch_far >= readable) return;
  const auto* far = reinterpret_cast<const char*>(base + (t + prefetch_far) * stride);
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

// Calls f(std::integral_constant<int, hd>) for the head widths the vector kernels are built for (32, 64,
// 128); false, calling nothing, for any other.
template <class F>
bool for_head_width(uint32_t hd, F&& f) {
  switch (hd) {
    case 32: f(std::integral_constant<int, 32>{}); return true;
    case 64: f(std::integral_constant<int, 64>{}); return true;
    case 128: f(std::integral_constant<int, 128>{}); return true;
    default: return false;
  }
}

}  // namespace dualpath::gpu::cpu::rows
