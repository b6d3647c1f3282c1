#pragma once
// Shared by the transport tests: aligned buffers, checksums and bounded polling of endpoints.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "transport/endpoint.hpp"

namespace dualpath::transport::testing {

struct aligned_buffer {
  explicit aligned_buffer(size_t n) : size(n), ptr(static_cast<std::byte*>(std::aligned_alloc(4096, round(n)))) {}
  ~aligned_buffer() { std::free(ptr); }
  static size_t round(size_t n) { return (n + 4095) / 4096 * 4096; }
  size_t size;
  std::byte* ptr;
};

inline uint64_t fnv1a(const std::byte* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<uint8_t>(p[i])) * 1099511628211ull;
  return h;
}

inline void fill_random(std::byte* p, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<std::byte>(rng() & 0xff);
}

// Polls every endpoint until `done()` holds; false if `limit` passed first (so no test can hang).
inline bool pump(const std::vector<endpoint*>& eps, const std::function<bool()>& done,
                 std::chrono::milliseconds limit, std::vector<completion>* completions = nullptr,
                 std::vector<arrival>* arrivals = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    for (size_t i = 0; i < eps.size(); ++i) {
      auto c = eps[i]->poll_completions();
      auto a = eps[i]->poll_arrivals();
      if (i == 0 && completions) completions->insert(completions->end(), c.begin(), c.end());
      if (i == eps.size() - 1 && arrivals) arrivals->insert(arrivals->end(), a.begin(), a.end());
    }
  }
  return true;
}

}  // namespace dualpath::transport::testing
