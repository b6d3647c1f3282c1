#pragma once
// How a backend turns a position's logits into its token (docs/design.md §10, §18): greedy, or drawn with a
// temperature and nucleus (top-p) cut. The draw depends only on the request's seed and the token's position in
// the sequence, never on the batch or on earlier draws, so a full recompute of a sampled answer (`--verify`)
// draws the same tokens from the same logits.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace dualpath::gpu {

struct sampling {
  float temperature = 0;  // 0: greedy
  float top_p = 1;        // (0, 1]: the smallest set of most likely tokens whose probability reaches it
  uint64_t seed = 0;
  bool greedy() const { return !(temperature > 0); }
};

namespace detail {

// SplitMix64's finalizer: a well-mixed 64-bit value of (seed, position), the same on every machine.
inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace detail

// The largest of `n` logits, the lowest index among ties: the greedy token.
inline int32_t argmax(const float* x, uint64_t n) {
  uint64_t best = 0;
  for (uint64_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return int32_t(best);
}

// The token at sequence position `position` (the prompt and the tokens before it) from `n` logits: with
// greedy sampling the largest (the lowest index among ties), otherwise drawn from softmax(logits / T)
// restricted to the top-p nucleus by a uniform number derived from (seed, position). Inline: the cuda
// backend's library picks with it too.
inline int32_t pick_token(const float* logits, uint64_t n, const sampling& s, uint64_t position) {
  const int32_t best = argmax(logits, n);
  if (s.greedy() || n < 2) return best;
  const double top = logits[best], t = s.temperature;
  std::vector<double> p(n);
  for (uint64_t i = 0; i < n; ++i) p[i] = std::exp((double(logits[i]) - top) / t);
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  size_t kept = n;
  double mass = std::accumulate(p.begin(), p.end(), 0.0);
  if (s.top_p < 1) {
    // Most likely first (ties by index): the nucleus is a prefix of this order. Without a cut every token is
    // in it, and the draw needs no order: a vocabulary is not sorted per token for nothing.
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return p[a] > p[b]; });
    const double cut = std::max(double(s.top_p), 0.0) * mass;
    kept = 0;
    mass = 0;
    while (kept < n && (kept == 0 || mass < cut)) mass += p[order[kept++]];
    // Tokens within a hair (relative 1e-4) of the last one kept are kept too, so that last-bit differences
    // (below) do not move a token in or out of the nucleus, which would change the mass every draw scales to.
    const double edge = p[order[kept - 1]] * (1 - 1e-4);
    while (kept < n && p[order[kept]] >= edge) mass += p[order[kept++]];
    // The draw walks the nucleus in vocabulary order, not by probability: two tokens of nearly equal
    // probability swap places under the last bits of difference between a pass over loaded KV and a full
    // recompute (another batch shape, another summation order), and a walk in probability order would then
    // hand the same uniform number to the other token. In vocabulary order only a number within that
    // difference of a boundary can change its token.
    std::sort(order.begin(), order.begin() + std::ptrdiff_t(kept));
  }
  const double u = double(detail::mix(s.seed ^ detail::mix(position)) >> 11) * 0x1.0p-53 * mass;  // in [0, mass)
  double acc = 0;
  for (size_t k = 0; k < kept; ++k) {
    acc += p[order[k]];
    if (u < acc) return int32_t(order[k]);
  }
  return int32_t(order[kept - 1]);
}

}  // namespace dualpath::gpu
