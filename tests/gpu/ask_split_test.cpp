// How a decode attention block's key pass, the softmax after it and its value pass share the asking for the next
// block's rows (gpu/cpu_bf16_rows.hpp): each asks whole lines of its own part, the parts follow each other in
// address order over the rows ahead, and nothing past the rows named is asked.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpu/cpu_bf16_rows.hpp"

using namespace dualpath::gpu::cpu;

namespace {

constexpr uint32_t kv_heads = 4, hd = 64, tokens = 64, rq = 2;
constexpr uint64_t stride = uint64_t(kv_heads) * hd * 4;  // a row: keys then values, bf16

// The lines a walk asks for, as offsets into the rows ahead: each call's asking stepped through its tokens.
struct asked {
  std::vector<uint64_t> lines;
  void run(rows::stream_ask a, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t from = a.line;
      a.token();
      for (uint64_t l = from; l < a.line; l += 64) lines.push_back(l);
    }
  }
  bool ascending_once() const {
    return std::adjacent_find(lines.begin(), lines.end(), [](uint64_t a, uint64_t b) { return b <= a; }) == lines.end();
  }
};

asked key_walk(const rows::stream_ahead& ahead) {
  asked out;
  rows::walk_keys<2>(
      kv_heads, rq, tokens, kv_heads * hd, ahead,
      [&](auto, uint32_t, uint64_t, uint32_t, uint32_t n, uint32_t, const rows::stream_ask& far) { out.run(far, n); });
  return out;
}

asked value_walk(const rows::stream_ahead& ahead) {
  asked out;
  rows::walk_values<2>(kv_heads, rq, tokens, hd, 32, ahead,
                       [&](auto, uint32_t, uint64_t, uint32_t, uint32_t t0, uint32_t t1, const rows::stream_ask& far) {
                         out.run(far, t1 - t0);
                       });
  return out;
}

}  // namespace

TEST_CASE("the key pass, the softmax and the value pass ask for the rows ahead in their shares, in order") {
  std::vector<std::byte> next(tokens * stride);
  const rows_ahead ahead{next.data(), tokens};
  const uint64_t bytes = tokens * stride;
  for (const ask_split split : {ask_split{50, 0}, ask_split{45, 20}, ask_split{60, 0}, ask_split{50, 25}}) {
    CAPTURE(split.key_percent);
    CAPTURE(split.softmax_percent);
    const uint64_t key_end = bytes * split.key_percent / 100,
                   value_from = bytes * (split.key_percent + split.softmax_percent) / 100;
    const rows::stream_ahead stream(ahead, stride, tokens, kv_heads, hd, split);
    const asked keys = key_walk(stream), values = value_walk(stream);
    REQUIRE(!keys.lines.empty());
    REQUIRE(!values.lines.empty());
    // Each pass asks each line of its part once, in address order.
    CHECK(keys.ascending_once());
    CHECK(values.ascending_once());
    CHECK(keys.lines.front() == 0);
    CHECK(keys.lines.back() < key_end + 64);
    CHECK(keys.lines.back() + 64 >= key_end - 64);
    CHECK(values.lines.front() >= value_from);
    CHECK(values.lines.front() < value_from + 64);
    CHECK(values.lines.back() + 64 >= bytes - 64);
    CHECK(values.lines.back() < bytes);
    // The softmax asks the lines between, a share at each of its rows, and is done after the last.
    rows::softmax_asks soft(split, stride, kv_heads * rq);
    soft.add(ahead, tokens);
    const uint64_t gap_lines = split.softmax_percent ? (value_from - (key_end + 63) / 64 * 64 + 63) / 64 : 0;
    CHECK(soft.lines() == gap_lines);
    for (uint32_t r = 0; r < kv_heads * rq; ++r) soft.row();
    CHECK(soft.done());
  }
}

TEST_CASE("no line past the rows ahead is asked for, where the request ends within the next block") {
  std::vector<std::byte> next(tokens * stride);
  const rows_ahead ahead{next.data(), 24};  // 24 rows follow, not 64
  const ask_split split{45, 20};
  const rows::stream_ahead stream(ahead, stride, tokens, kv_heads, hd, split);
  const asked keys = key_walk(stream), values = value_walk(stream);
  for (uint64_t l : keys.lines) CHECK(l < 24 * stride);
  CHECK(values.lines.empty());  // the value pass's part starts past the 24 rows
  rows::softmax_asks soft(split, stride, kv_heads * rq);
  soft.add(ahead, tokens);
  CHECK(soft.lines() == 0);        // its part, 45-65% of 64 rows, starts at row 28
  soft.add({nullptr, 0}, tokens);  // no rows ahead: nothing to ask
  CHECK(soft.lines() == 0);
}

TEST_CASE("the softmax asks nothing where the passes ask nothing ahead") {
  // A head width the vector kernels do not take runs the portable passes, which ask for no rows ahead.
  CHECK(bf16_ask_split(48).softmax_percent == 0);
  const ask_split s = bf16_ask_split(64);
  CHECK(s.key_percent + s.softmax_percent <= 100);
}
