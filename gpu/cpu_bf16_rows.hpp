#pragma once
// How the decode attention's vector kernels (cpu_bf16_avx512.cpp, cpu_bf16_avx2.cpp) walk bf16 KV rows and
// ask for them ahead of time. Both widths read the same rows in the same order, so they share the distances
// and the way of asking below, each width with its own ask_split (docs/design.md §10, cpu backend;
// docs/experiments.md, "Limits").
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "gpu/cpu_kernels.hpp"

namespace dualpath::gpu::cpu::rows {

// Tokens whose dot products are summed across lanes together (one 8-lane result).
constexpr uint32_t token_group = 8;
// Rows are read a slice at a time at a large stride, which the hardware prefetcher does not follow far
// enough; a row this many tokens on is asked for while the current one is used.
constexpr uint32_t prefetch_ahead = 16;
// Tokens per block of the value pass: a block's rows stay in L1/L2 while each head takes its slice of them.
constexpr uint32_t value_block = 64;
// Both passes ask for the rows rows_ahead_keys tokens on (the caller's next block of 64, which the caller names:
// in a decode engine's pages it is in another span) into L2 while they work on rows already in cache, so that
// the next block's keys and values are there when needed. They ask in address order, in step with their reading:
// as the key pass reads each head's slice of its rows and then the value pass, each token's share of a pass's
// reading asks for the same share of that pass's part of the rows ahead (the softmax between them asks its own
// part: stream_ahead and softmax_asks), so whole rows are asked for one after another and the memory serves one
// stream. Asking each pass's own slices of the rows ahead (the key pass the first half of each row, the value
// pass the second: two strided streams over the same rows) left the memory's time and the arithmetic's adding up
// on a CPU without AVX-512: the attention of a decode step read its KV at 6.8 GB/s on one thread, 11 this way
// (docs/experiments.md).

// The line at p, into L2. An instruction the compiler must emit: GCC 12 deleted whole loops of nothing but
// __builtin_prefetch in some shapes of this code (a member function, the pointer copied to a local), so the
// rows ahead were never asked for; the disassembly of the kernels shows the prefetcht2 now.
inline void ask_line(const char* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht2 %0" : : "m"(*p));
#else
  __builtin_prefetch(p, 0, 1);
#endif
}

// The first line boundary at or after `byte` of the rows ahead. A phase's part is asked as the whole lines that
// start inside it, so the parts of the key pass, the softmax and the value pass never ask a line twice.
inline uint64_t line_at_or_after(uint64_t byte) { return (byte + 63) / 64 * 64; }

// What one kernel call asks for, a token at a time: its i-th token() asks for the lines of the rows ahead that
// start in bytes [from + i·step, from + (i + 1)·step), those before `end`. A cursor, so that a token's asking is
// an add, a compare and its prefetches: each token's range computed afresh (a multiply and a rounding per token
// and call) left the attention over KV in cache 6% slower on one thread (docs/experiments.md).
struct stream_ask {
  const char* rows = nullptr;  // the rows ahead
  uint64_t line = 0;           // the next line to ask for (bytes from `rows`, a multiple of 64)
  uint64_t upto = 0;           // the end of the bytes the tokens so far have covered
  uint64_t end = 0, step = 0;  // no rows: end 0, nothing asked
  void token() {
    upto += step;
    const uint64_t to = std::min(upto, end);
    for (; line < to; line += 64) ask_line(rows + line);
  }
};

// Where each phase's part of `bytes` of rows ahead lies: the key pass asks [0, key_end), the softmax
// [key_end, value_from), the value pass [value_from, bytes).
struct ask_parts {
  uint64_t key_end, value_from;
  ask_parts(uint64_t bytes, ask_split split)
      : key_end(bytes * split.key_percent / 100),
        value_from(bytes * (split.key_percent + split.softmax_percent) / 100) {}
};

// Bytes of the rows ahead that exist: fewer than a block's where the request ends within its next block.
inline uint64_t ahead_bytes(rows_ahead ahead, uint64_t stride) {
  return std::min<uint64_t>(ahead.count, rows_ahead_keys) * stride;
}

// The rows ahead of a call over `tokens` rows whose rows hold kv_heads keys and values of hd bf16 elements each
// (and perhaps more): the key pass's reading (the first half of the bytes both passes read) asks for the first
// split.key_percent of the rows ahead, the value pass's for the part after the softmax's (softmax_asks). The
// shares follow the phases' time, not their bytes: asked in step with the bytes read, the value pass (about
// half the key pass's time for as many bytes) asked nearly twice as fast as the key pass, and nothing was asked
// while the softmax ran between them; with the asking spread over the three by time, the attention of a decode
// step read its KV from DRAM 8-10% faster on Zen 2 (docs/experiments.md, "Limits").
class stream_ahead {
 public:
  stream_ahead(rows_ahead ahead, uint64_t stride, uint32_t tokens, uint32_t kv_heads, uint32_t hd, ask_split split)
      : rows_(reinterpret_cast<const char*>(ahead.rows)),
        end_(ahead_bytes(ahead, stride)),
        read_(uint64_t(tokens) * kv_heads * hd * 4),
        bytes_(uint64_t(tokens) * stride),
        parts_(bytes_, split) {}
  uint64_t read() const { return read_; }  // bytes both passes read from the call's rows
  // The call that reads bytes [first, first + n·step) of the passes' reading, `step` a token.
  stream_ask call(uint64_t first, uint64_t step) const {
    const uint64_t half = read_ / 2;
    if (!rows_ || end_ == 0 || half == 0) return {};
    const bool keys = first < half;
    const uint64_t base = keys ? 0 : parts_.value_from, span = keys ? parts_.key_end : bytes_ - parts_.value_from;
    const uint64_t from = base + (keys ? first : first - half) * span / half;
    return {rows_, line_at_or_after(from), from, end_, step * span / half};
  }

 private:
  const char* rows_;
  uint64_t end_, read_;
  uint64_t bytes_;   // bytes of as many rows ahead as the call reads
  ask_parts parts_;  // of bytes_
};

// The softmax's part (ask_parts) of the rows ahead of one block: add() each piece of the block (a span of
// `tokens` rows and its rows ahead), then row() once for each of the `rows` rows of scores as the softmax takes
// them, each asking its share of the lines.
class softmax_asks {
 public:
  softmax_asks(ask_split split, uint64_t stride, uint64_t rows)
      : split_(split), stride_(stride), rows_(std::max<uint64_t>(rows, 1)) {}
  void add(rows_ahead ahead, uint32_t tokens) {
    if (!ahead.rows || split_.softmax_percent == 0 || count_ == ranges_.size()) return;
    const ask_parts parts(uint64_t(tokens) * stride_, split_);
    const uint64_t from = line_at_or_after(parts.key_end), to = std::min(parts.value_from, ahead_bytes(ahead, stride_));
    if (to <= from) return;
    ranges_[count_++] = {reinterpret_cast<const char*>(ahead.rows) + from, to - from};
    lines_ += line_at_or_after(to - from) / 64;
  }
  uint64_t lines() const { return lines_; }  // lines the softmax asks for, over all its rows
  bool done() const { return next_ == count_; }
  void row() {
    const uint64_t share = (lines_ + rows_ - 1) / rows_;
    for (uint64_t k = 0; k < share && next_ < count_; ++k) {
      range& r = ranges_[next_];  // never empty: add() keeps only ranges with bytes
      ask_line(r.at);
      r.at += 64;
      r.bytes = r.bytes > 64 ? r.bytes - 64 : 0;
      if (r.bytes == 0) ++next_;
    }
  }

 private:
  struct range {
    const char* at;
    uint64_t bytes;
  };
  ask_split split_;
  uint64_t stride_, rows_, lines_ = 0;
  std::array<range, rows_ahead_keys> ranges_;  // a block has at most one piece a key; [0, count_) set
  size_t count_ = 0, next_ = 0;
};

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__)
// Row r's n <= token_group scores (`dots`, lane i: token i) at dst: a whole group is one store (std::copy of
// eight floats was a library call per row and group).
__attribute__((target("avx2"), always_inline)) inline void store_scores(float* dst, __m256 dots, uint32_t n) {
  if (n == token_group) {
    _mm256_storeu_ps(dst, dots);
  } else {
    alignas(32) float out[token_group];
    _mm256_store_ps(out, dots);
    std::copy(out, out + n, dst);
  }
}
#endif

// Element `off` of row t.
inline const uint16_t* row(const std::byte* base, uint64_t stride, uint32_t t, uint64_t off) {
  return reinterpret_cast<const uint16_t*>(base + t * stride) + off;
}

// The lines of `elements` bf16 values from p, into L1.
inline void prefetch(const uint16_t* p, uint32_t elements) {
  const auto* c = reinterpret_cast<const char*>(p);
  for (uint32_t b = 0; b < elements * 2; b += 64) __builtin_prefetch(c + b);
}

// f(std::integral_constant<int, R>, r0) for query rows [0, rq) R at a time, then f(..<1>.., r0) for the rest
// one at a time: the rows a kernel call takes, in the order both walks take them.
template <int R, class F>
void in_row_groups(uint64_t rq, F&& f) {
  uint64_t r0 = 0;
  for (; r0 + R <= rq; r0 += R) f(std::integral_constant<int, R>{}, r0);
  for (; r0 < rq; ++r0) f(std::integral_constant<int, 1>{}, r0);
}

// The key pass's walk, the same at every width: tokens token_group at a time, each KV head, its query rows R at
// a time and then one at a time, as rows(std::integral_constant<int, R or 1>, g, r0, t0, n, near, far). The
// first call of a token group asks for the rows near (head 0: `width` elements of every key) and each head's
// first call for its share of the rows ahead; the other calls ask for none.
template <int R, class Rows>
void walk_keys(uint32_t kv_heads, uint64_t rq, uint32_t tokens, uint32_t width, const stream_ahead& ahead,
               Rows&& rows) {
  const uint64_t slice = uint64_t(width / kv_heads) * 2;  // bytes of one head's key
  for (uint32_t t0 = 0; t0 < tokens; t0 += token_group) {
    const uint32_t n = std::min(token_group, tokens - t0);
    for (uint32_t g = 0; g < kv_heads; ++g) {
      const stream_ask far = ahead.call((uint64_t(t0) * kv_heads + uint64_t(g) * n) * slice, slice);
      in_row_groups<R>(rq, [&](auto rc, uint64_t r0) {
        rows(rc, g, r0, t0, n, g == 0 && r0 == 0 ? width : 0, r0 == 0 ? far : stream_ask{});
      });
    }
  }
}

// The value pass's walk: tokens value_block at a time, each KV head, its output dimensions `cols` at a time
// (all hd of them where the registers hold a whole row), its rows R at a time and then one at a time, as
// rows(std::integral_constant<int, R or 1>, g, r0, c0, t0, t1, far). Each head's first call of a column block asks
// for its share of the rows ahead (after the key pass's); the others, none.
template <int R, class Rows>
void walk_values(uint32_t kv_heads, uint64_t rq, uint32_t tokens, uint32_t hd, uint32_t cols, const stream_ahead& ahead,
                 Rows&& rows) {
  for (uint32_t t0 = 0; t0 < tokens; t0 += value_block) {
    const uint32_t t1 = std::min(tokens, t0 + value_block);
    for (uint32_t g = 0; g < kv_heads; ++g)
      for (uint32_t c0 = 0; c0 < hd; c0 += cols) {
        const uint64_t first = ahead.read() / 2 + (uint64_t(t0) * kv_heads + uint64_t(g) * (t1 - t0)) * hd * 2 +
                               uint64_t(c0) * (t1 - t0) * 2;
        const stream_ask far = ahead.call(first, uint64_t(cols) * 2);
        in_row_groups<R>(rq, [&](auto rc, uint64_t r0) { rows(rc, g, r0, c0, t0, t1, r0 == 0 ? far : stream_ask{}); });
      }
  }
}

}  // namespace dualpath::gpu::cpu::rows
