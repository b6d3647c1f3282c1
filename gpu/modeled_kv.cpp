// Modeled KV bytes and tokens (gpu/backend.hpp, docs/design.md §10): a splitmix64 stream seeded by (layer,
// position, token). Every Layer Block that arrives is checked against it, so on a run of the modeled backend
// these bytes are generated twice per block (once written, once expected) and are a visible share of the CPU.
// Word k of a stream is mix(seed + (k + 1)·γ), independent of the words before it, so eight are computed at
// once where the CPU has AVX-512 (64-bit multiplies), four where it has AVX2, and a check compares as it
// generates, with no buffer.
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
constexpr uint64_t mul1 = 0xbf58476d1ce4e5b9ull, mul2 = 0x94d049bb133111ebull;

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * mul1;
  z = (z ^ (z >> 27)) * mul2;
  return z ^ (z >> 31);
}

uint64_t stream_seed(uint32_t layer, uint32_t position, int32_t token) {
  return (uint64_t(layer) << 48) ^ (uint64_t(position) << 16) ^ (uint64_t(uint32_t(token)) * 0x2545f4914f6cdd1dull);
}

// Word k of the stream seeded `seed`.
uint64_t word(uint64_t seed, uint64_t k) { return mix(seed + (k + 1) * golden); }

#if defined(__x86_64__)
#define DUALPATH_AVX512 __attribute__((target("avx512f,avx512dq")))

// Words k .. k+7 of the stream, as one vector (GCC's vector extension: the multiplies become vpmullq).
using u64x8 = uint64_t __attribute__((vector_size(64)));

DUALPATH_AVX512 __m512i words8(uint64_t seed, uint64_t k) {
  const u64x8 lane = {1, 2, 3, 4, 5, 6, 7, 8};
  u64x8 z = (seed + k * golden) + lane * golden;
  z = (z ^ (z >> 30)) * mul1;
  z = (z ^ (z >> 27)) * mul2;
  return __m512i(z ^ (z >> 31));
}

// The whole 64-byte chunks of `bytes`: written to dst. Returns the bytes done.
DUALPATH_AVX512 uint32_t fill_chunks(uint64_t seed, std::byte* dst, uint32_t bytes) {
  uint32_t i = 0;
  for (; i + 64 <= bytes; i += 64) _mm512_storeu_si512(dst + i, words8(seed, i / 8));
  return i;
}

// The whole 64-byte chunks of `bytes`: compared with data. Returns the bytes that matched before the first
// chunk that did not (a multiple of 64; less than the chunks' end on a mismatch).
DUALPATH_AVX512 uint32_t match_chunks(uint64_t seed, const std::byte* data, uint32_t bytes) {
  uint32_t i = 0;
  for (; i + 64 <= bytes; i += 64)
    if (_mm512_cmpneq_epi64_mask(_mm512_loadu_si512(data + i), words8(seed, i / 8)) != 0) break;
  return i;
}

// Without AVX-512 (no 64-bit multiply in a vector), four words at once under AVX2: each 64-bit product from
// three 32 × 32 → 64 multiplies, a·b = lo(a)·lo(b) + ((hi(a)·lo(b) + lo(a)·hi(b)) << 32) mod 2^64. The scalar
// words, two 64-bit multiplies each, checked at 3.5-4.5 GB/s on a Zen 3 core and were a sixth of the busy CPU
// of a modeled run there (docs/experiments.md).
#define DUALPATH_AVX2 __attribute__((target("avx2")))

DUALPATH_AVX2 __m256i mul64(__m256i a, uint64_t b) {
  const __m256i lo = _mm256_set1_epi64x(int64_t(b & 0xffffffffu)), hi = _mm256_set1_epi64x(int64_t(b >> 32));
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), lo), _mm256_mul_epu32(a, hi));
  return _mm256_add_epi64(_mm256_mul_epu32(a, lo), _mm256_slli_epi64(cross, 32));
}

// Words k .. k+3 of the stream, as one vector.
DUALPATH_AVX2 __m256i words4(uint64_t seed, uint64_t k) {
  const __m256i lane =
      _mm256_set_epi64x(int64_t(4 * golden), int64_t(3 * golden), int64_t(2 * golden), int64_t(golden));
  __m256i z = _mm256_add_epi64(_mm256_set1_epi64x(int64_t(seed + k * golden)), lane);
  z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), mul1);
  z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), mul2);
  return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

// As fill_chunks and match_chunks, in 32-byte chunks.
DUALPATH_AVX2 uint32_t fill_chunks4(uint64_t seed, std::byte* dst, uint32_t bytes) {
  uint32_t i = 0;
  for (; i + 32 <= bytes; i += 32) _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), words4(seed, i / 8));
  return i;
}

DUALPATH_AVX2 uint32_t match_chunks4(uint64_t seed, const std::byte* data, uint32_t bytes) {
  uint32_t i = 0;
  for (; i + 32 <= bytes; i += 32) {
    const __m256i got = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i));
    if (_mm256_movemask_epi8(_mm256_cmpeq_epi64(got, words4(seed, i / 8))) != -1) break;
  }
  return i;
}

// Words a chunk takes (8, 4 or 1): `asked`, or the widest this CPU computes where it asks for none or for more.
uint32_t chunk_words(uint32_t asked) {
  static const uint32_t widest = cpu::has_avx512f() && cpu::has_avx512dq() ? 8 : cpu::has_avx2() ? 4 : 1;
  if (asked == 0 || asked >= widest) return widest;
  return asked >= 4 ? 4 : 1;
}

// Bytes done in chunks of `words` words, as fill_chunks and match_chunks (none for one word a chunk).
uint32_t fill_wide(uint64_t seed, std::byte* dst, uint32_t bytes, uint32_t words) {
  if (words == 8) return fill_chunks(seed, dst, bytes);
  return words == 4 ? fill_chunks4(seed, dst, bytes) : 0;
}

uint32_t match_wide(uint64_t seed, const std::byte* data, uint32_t bytes, uint32_t words) {
  if (words == 8) return match_chunks(seed, data, bytes);
  return words == 4 ? match_chunks4(seed, data, bytes) : 0;
}
#else
uint32_t chunk_words(uint32_t) { return 1; }
uint32_t fill_wide(uint64_t, std::byte*, uint32_t, uint32_t) { return 0; }
uint32_t match_wide(uint64_t, const std::byte*, uint32_t, uint32_t) { return 0; }
#endif

}  // namespace

void modeled_kv_fill(uint32_t layer, uint32_t position, int32_t token, std::byte* dst, uint32_t bytes, uint32_t words) {
  const uint64_t seed = stream_seed(layer, position, token);
  uint32_t i = fill_wide(seed, dst, bytes, chunk_words(words));
  // Whole words by a copy of constant size (inlined: a copy of min(8, rest) bytes is a library call per word,
  // which on a CPU without AVX-512 was the larger part of a modeled run's checking).
  for (; i + 8 <= bytes; i += 8) {
    const uint64_t v = word(seed, i / 8);
    std::memcpy(dst + i, &v, 8);
  }
  if (i < bytes) {
    const uint64_t v = word(seed, i / 8);
    std::memcpy(dst + i, &v, bytes - i);
  }
}

bool modeled_kv_matches(uint32_t layer, uint32_t first_position, const int32_t* tokens, uint32_t count,
                        const std::byte* data, uint32_t bytes, uint32_t words) {
  const uint32_t w = chunk_words(words), chunk = 8 * w;
  for (uint32_t t = 0; t < count; ++t) {
    const uint64_t seed = stream_seed(layer, first_position + t, tokens[t]);
    const std::byte* row = data + uint64_t(t) * bytes;
    uint32_t i = match_wide(seed, row, bytes, w);
    if (w > 1 && i + chunk <= bytes) return false;  // a whole chunk differed
    for (; i + 8 <= bytes; i += 8) {                // whole words as integers, as modeled_kv_fill writes them
      uint64_t got;
      std::memcpy(&got, row + i, 8);
      if (got != word(seed, i / 8)) return false;
    }
    if (i < bytes) {
      const uint64_t v = word(seed, i / 8);
      if (std::memcmp(row + i, &v, bytes - i) != 0) return false;
    }
  }
  return true;
}

int32_t modeled_next_token(int32_t last_token, uint32_t position, uint32_t vocab) {
  const uint64_t seed = (uint64_t(uint32_t(last_token)) << 32) | position;
  return int32_t(word(seed, 0) % (vocab ? vocab : 1));
}

}  // namespace dualpath::gpu
