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

// The counters in z become their words: fmix32, xored with hi. For one lane (a uint32_t) or every lane of a
// vector, the one place a word is defined. In place, by reference: a vector passed by value outside a function
// built for its width would change the ABI (GCC's -Wpsabi).
template <class V>
__attribute__((always_inline)) inline void fmix_words(V& z, uint32_t hi) {
  z = (z ^ (z >> 16)) * mul_a;
  z = (z ^ (z >> 13)) * mul_b;
  z = z ^ (z >> 16) ^ hi;
}

// Word k of the stream.
uint32_t word(seed32 s, uint32_t k) {
  uint32_t z = s.lo + (k + 1) * golden32;
  fmix_words(z, s.hi);
  return z;
}

struct matched {
  uint32_t end = 0;  // bytes compared, in whole chunks
  bool ok = true;    // every one equal
};

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

// z = the counters of the N words from byte `from` on (a multiple of 4): lane k's is lo + (from / 4 + k + 1)·γ.
template <int N>
__attribute__((always_inline)) inline void counters(seed32 s, uint32_t from, u32v<N>& z) {
  for (int k = 0; k < N; ++k) z[k] = s.lo + (from / 4 + uint32_t(k) + 1) * golden32;
}

// Bytes [from, bytes) in whole chunks of 4·N bytes, written to dst. Returns where the chunks end.
template <int N>
__attribute__((always_inline)) inline uint32_t fill_chunks(seed32 s, std::byte* dst, uint32_t from, uint32_t bytes) {
  u32v<N> z;
  counters<N>(s, from, z);
  uint32_t i = from;
  for (; i + 4 * N <= bytes; i += 4 * N, z += uint32_t(N) * golden32) {
    u32v<N> w = z;
    fmix_words(w, s.hi);
    std::memcpy(dst + i, &w, sizeof w);
  }
  return i;
}

// Bytes [from, bytes) in whole chunks of 4·N bytes, compared with data: all of them, their differences ORed
// and tested once (no branch per chunk).
template <int N>
__attribute__((always_inline)) inline matched match_chunks(seed32 s, const std::byte* data, uint32_t from,
                                                           uint32_t bytes) {
  u32v<N> z, diff = {};
  counters<N>(s, from, z);
  uint32_t i = from;
  for (; i + 4 * N <= bytes; i += 4 * N, z += uint32_t(N) * golden32) {
    u32v<N> got, w = z;
    fmix_words(w, s.hi);
    std::memcpy(&got, data + i, sizeof got);
    diff |= got ^ w;
  }
  uint64_t halves[N / 2], any = 0;
  std::memcpy(halves, &diff, sizeof diff);
  for (int k = 0; k < N / 2; ++k) any |= halves[k];
  return {i, any == 0};
}

// Each width takes the whole chunks it can, then narrower ones (a 656-byte row: 10 of 64 bytes and one of 16, or
// 20 of 32 and one of 16); fewer than 16 bytes are left to the word loop.
#define DUALPATH_AVX512 __attribute__((target("avx512f")))
#define DUALPATH_AVX2 __attribute__((target("avx2")))

DUALPATH_AVX2 uint32_t fill8(seed32 s, std::byte* dst, uint32_t from, uint32_t bytes) {
  return fill_chunks<4>(s, dst, fill_chunks<8>(s, dst, from, bytes), bytes);
}
DUALPATH_AVX512 uint32_t fill16(seed32 s, std::byte* dst, uint32_t bytes) {
  return fill8(s, dst, fill_chunks<16>(s, dst, 0, bytes), bytes);
}
DUALPATH_AVX2 matched match8(seed32 s, const std::byte* data, uint32_t from, uint32_t bytes) {
  const matched wide = match_chunks<8>(s, data, from, bytes), narrow = match_chunks<4>(s, data, wide.end, bytes);
  return {narrow.end, wide.ok && narrow.ok};
}
DUALPATH_AVX512 matched match16(seed32 s, const std::byte* data, uint32_t bytes) {
  const matched wide = match_chunks<16>(s, data, 0, bytes), rest = match8(s, data, wide.end, bytes);
  return {rest.end, wide.ok && rest.ok};
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
  return lanes == 8 ? fill8(s, dst, 0, bytes) : 0;
}

matched match_wide(seed32 s, const std::byte* data, uint32_t bytes, uint32_t lanes) {
  if (lanes == 16) return match16(s, data, bytes);
  return lanes == 8 ? match8(s, data, 0, bytes) : matched{};
}
#else
uint32_t chunk_lanes(uint32_t) { return 1; }
uint32_t fill_wide(seed32, std::byte*, uint32_t, uint32_t) { return 0; }
matched match_wide(seed32, const std::byte*, uint32_t, uint32_t) { return {}; }
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
    const matched wide = match_wide(seed, row, bytes, lanes);
    if (!wide.ok) return false;
    uint32_t i = wide.end;
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
