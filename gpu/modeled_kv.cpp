// Modeled KV bytes and tokens (gpu/backend.hpp, docs/design.md §10): a stream of 32-bit words seeded by (layer,
// position, token). Every Layer Block that arrives is checked against it, so on a run of the modeled backend
// these bytes are generated twice per block (once written, once expected) and are a visible share of the CPU.
// Word k of a stream is fmix32(lo + (k + 1)·γ) ^ hi, (lo, hi) the two halves of the token's 64-bit seed: each
// word independent of the words before it and made with 32-bit multiplies, which every vector width has, so
// sixteen are computed at once with AVX-512 and eight with AVX2, and a check compares as it generates, with no
// buffer. (The words were splitmix64 before: a 64-bit multiply is three 32-bit ones under AVX2, and checking
// took a tenth of a modeled run's CPU on a 2-core VM; docs/experiments.md.) fmix32 is a bijection, so two
// seeds' words are equal only by chance (about one word in 2^32), and a Layer Block delivered for the wrong
// token or layer fails the check.
#include <algorithm>
#include <cstring>

#include "gpu/backend.hpp"
#include "gpu/cpu_simd.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dualpath::gpu {

namespace {

constexpr uint64_t golden = 0x9e3779b97f4a7c15ull;
constexpr uint32_t golden32 = 0x9e3779b9u, mul_a = 0x85ebca6bu, mul_b = 0xc2b2ae35u;

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct seed32 {
  uint32_t lo, hi;
};

seed32 stream_seed(uint32_t layer, uint32_t position, int32_t token) {
  const uint64_t s =
      mix((uint64_t(layer) << 48) ^ (uint64_t(position) << 16) ^ (uint64_t(uint32_t(token)) * 0x2545f4914f6cdd1dull));
  return {uint32_t(s), uint32_t(s >> 32)};
}

// Word k of the stream.
uint32_t word(seed32 s, uint32_t k) {
  uint32_t z = s.lo + (k + 1) * golden32;
  z = (z ^ (z >> 16)) * mul_a;
  z = (z ^ (z >> 13)) * mul_b;
  return (z ^ (z >> 16)) ^ s.hi;
}

#if defined(__x86_64__)
// GCC's vector extension: the same words at any width (the multiplies become vpmulld).
typedef uint32_t u32x4 __attribute__((vector_size(16)));
typedef uint32_t u32x8 __attribute__((vector_size(32)));
typedef uint32_t u32x16 __attribute__((vector_size(64)));
template <int N>
struct lanes_of;
template <>
struct lanes_of<4> {
  using type = u32x4;
};
template <>
struct lanes_of<8> {
  using type = u32x8;
};
template <>
struct lanes_of<16> {
  using type = u32x16;
};
template <int N>
using u32v = typename lanes_of<N>::type;

// The whole chunks of 4·N bytes: written to dst. Returns the bytes done. Lane k's counter starts at lo + (k + 1)·γ
// and each chunk adds N·γ.
template <int N>
__attribute__((always_inline)) inline uint32_t fill_chunks(seed32 s, std::byte* dst, uint32_t bytes) {
  u32v<N> z;
  for (int k = 0; k < N; ++k) z[k] = s.lo + uint32_t(k + 1) * golden32;
  uint32_t i = 0;
  for (; i + 4 * N <= bytes; i += 4 * N, z += uint32_t(N) * golden32) {
    u32v<N> w = (z ^ (z >> 16)) * mul_a;  // word(), a lane each
    w = (w ^ (w >> 13)) * mul_b;
    w = w ^ (w >> 16) ^ s.hi;
    std::memcpy(dst + i, &w, sizeof w);
  }
  if (i + 2 * N <= bytes) {  // a half chunk (the 16 bytes after a 640-byte row's 20 chunks of 32)
    u32v<N / 2> h;
    std::memcpy(&h, &z, sizeof h);  // the next counters' first half
    h = (h ^ (h >> 16)) * mul_a;
    h = (h ^ (h >> 13)) * mul_b;
    h = h ^ (h >> 16) ^ s.hi;
    std::memcpy(dst + i, &h, sizeof h);
    i += 2 * N;
  }
  return i;
}

// The whole chunks of 4·N bytes: compared with data, all of them (no branch per chunk). Returns the bytes
// checked, or 0 on any difference (the caller then fails the row: fewer bytes than a chunk are left only when
// the row is shorter than one).
template <int N>
__attribute__((always_inline)) inline uint32_t match_chunks(seed32 s, const std::byte* data, uint32_t bytes) {
  u32v<N> z, diff = {};
  for (int k = 0; k < N; ++k) z[k] = s.lo + uint32_t(k + 1) * golden32;
  uint32_t i = 0;
  for (; i + 4 * N <= bytes; i += 4 * N, z += uint32_t(N) * golden32) {
    u32v<N> got, w = (z ^ (z >> 16)) * mul_a;  // word(), a lane each
    w = (w ^ (w >> 13)) * mul_b;
    std::memcpy(&got, data + i, sizeof got);
    diff |= got ^ w ^ (w >> 16) ^ s.hi;
  }
  if (i + 2 * N <= bytes) {  // a half chunk, as fill_chunks
    u32v<N / 2> h, got_h, diff_h;
    std::memcpy(&h, &z, sizeof h);
    h = (h ^ (h >> 16)) * mul_a;
    h = (h ^ (h >> 13)) * mul_b;
    std::memcpy(&got_h, data + i, sizeof got_h);
    std::memcpy(&diff_h, &diff, sizeof diff_h);  // joins the first half of the lanes' differences
    diff_h |= got_h ^ h ^ (h >> 16) ^ s.hi;
    std::memcpy(&diff, &diff_h, sizeof diff_h);
    i += 2 * N;
  }
  uint64_t halves[N / 2], any = 0;  // one test of all lanes, not a branch per lane
  std::memcpy(halves, &diff, sizeof diff);
  for (int k = 0; k < N / 2; ++k) any |= halves[k];
  return any ? 0 : i;
}

#define DUALPATH_AVX512 __attribute__((target("avx512f")))
#define DUALPATH_AVX2 __attribute__((target("avx2")))

DUALPATH_AVX512 uint32_t fill16(seed32 s, std::byte* dst, uint32_t bytes) { return fill_chunks<16>(s, dst, bytes); }
DUALPATH_AVX512 uint32_t match16(seed32 s, const std::byte* data, uint32_t bytes) {
  return match_chunks<16>(s, data, bytes);
}
DUALPATH_AVX2 uint32_t fill8(seed32 s, std::byte* dst, uint32_t bytes) { return fill_chunks<8>(s, dst, bytes); }
DUALPATH_AVX2 uint32_t match8(seed32 s, const std::byte* data, uint32_t bytes) {
  return match_chunks<8>(s, data, bytes);
}

// Lanes (32-bit words) a chunk takes: 16, 8 or 1, from the 8-byte words asked for (8, 4 or 1, as the
// interface counts them), or the widest this CPU computes where it asks for none or for more.
uint32_t chunk_lanes(uint32_t words) {
  static const uint32_t widest = cpu::has_avx512f() ? 16 : cpu::has_avx2() ? 8 : 1;
  const uint32_t asked = 2 * words;
  if (asked == 0 || asked >= widest) return widest;
  return asked >= 8 ? 8 : 1;
}

uint32_t fill_wide(seed32 s, std::byte* dst, uint32_t bytes, uint32_t lanes) {
  if (lanes == 16) return fill16(s, dst, bytes);
  return lanes == 8 ? fill8(s, dst, bytes) : 0;
}

// Bytes matched in whole chunks, or false through `ok` on a difference.
uint32_t match_wide(seed32 s, const std::byte* data, uint32_t bytes, uint32_t lanes, bool& ok) {
  const uint32_t chunk = 4 * lanes;
  if (lanes == 1 || bytes < chunk) return 0;
  const uint32_t done = lanes == 16 ? match16(s, data, bytes) : match8(s, data, bytes);
  ok = done != 0;
  return done;
}
#else
uint32_t chunk_lanes(uint32_t) { return 1; }
uint32_t fill_wide(seed32, std::byte*, uint32_t, uint32_t) { return 0; }
uint32_t match_wide(seed32, const std::byte*, uint32_t, uint32_t, bool&) { return 0; }
#endif

}  // namespace

void modeled_kv_fill(uint32_t layer, uint32_t position, int32_t token, std::byte* dst, uint32_t bytes, uint32_t words) {
  const seed32 seed = stream_seed(layer, position, token);
  uint32_t i = fill_wide(seed, dst, bytes, chunk_lanes(words));
  // Whole words by a copy of constant size (inlined: a copy of min(4, rest) bytes is a library call per word).
  for (; i + 4 <= bytes; i += 4) {
    const uint32_t v = word(seed, i / 4);
    std::memcpy(dst + i, &v, 4);
  }
  if (i < bytes) {
    const uint32_t v = word(seed, i / 4);
    std::memcpy(dst + i, &v, bytes - i);
  }
}

bool modeled_kv_matches(uint32_t layer, uint32_t first_position, const int32_t* tokens, uint32_t count,
                        const std::byte* data, uint32_t bytes, uint32_t words) {
  const uint32_t lanes = chunk_lanes(words);
  for (uint32_t t = 0; t < count; ++t) {
    const seed32 seed = stream_seed(layer, first_position + t, tokens[t]);
    const std::byte* row = data + uint64_t(t) * bytes;
    bool ok = true;
    uint32_t i = match_wide(seed, row, bytes, lanes, ok);
    if (!ok) return false;
    for (; i + 4 <= bytes; i += 4) {  // whole words as integers, as modeled_kv_fill writes them
      uint32_t got;
      std::memcpy(&got, row + i, 4);
      if (got != word(seed, i / 4)) return false;
    }
    if (i < bytes) {
      const uint32_t v = word(seed, i / 4);
      if (std::memcmp(row + i, &v, bytes - i) != 0) return false;
    }
  }
  return true;
}

int32_t modeled_next_token(int32_t last_token, uint32_t position, uint32_t vocab) {
  return int32_t(mix(((uint64_t(uint32_t(last_token)) << 32) | position) + golden) % (vocab ? vocab : 1));
}

}  // namespace dualpath::gpu
