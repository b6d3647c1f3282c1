#pragma once
// Shared by the transport tests: aligned buffers, checksums, connected endpoint pairs and bounded
// polling of endpoints.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
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
inline bool pump(const std::vector<endpoint*>& eps, const std::function<bool()>& done, std::chrono::milliseconds limit,
                 std::vector<completion>* completions = nullptr, std::vector<arrival>* arrivals = nullptr) {
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

// Loopback options with a timeout short enough that a broken path fails the test fast.
inline fabric_options loopback_options(const std::string& provider) {
  fabric_options o;
  o.provider = provider;
  o.timeout = std::chrono::milliseconds(2000);
  return o;
}

// Two connected endpoints: `a` reaches `b` as peer `to_b`.
struct endpoint_pair {
  std::unique_ptr<endpoint> a, b;
  uint32_t to_b = 0;

  explicit endpoint_pair(const fabric_options& opts) : a(endpoint::open(opts)), b(endpoint::open(opts)) {
    to_b = a->connect(b->address());
    b->connect(a->address());
  }
  std::vector<endpoint*> both() { return {a.get(), b.get()}; }
};

// An endpoint pair with a registered source on `a` (random bytes) and a zeroed destination on `b`,
// both `bytes` long: the usual setup of a transfer test.
struct buffered_pair : endpoint_pair {
  aligned_buffer src, dst;
  std::unique_ptr<memory_region> src_mr, dst_mr;

  buffered_pair(const fabric_options& opts, size_t bytes) : endpoint_pair(opts), src(bytes), dst(bytes) {
    fill_random(src.ptr, src.size, 5);
    std::fill(dst.ptr, dst.ptr + dst.size, std::byte{0});
    src_mr = a->register_memory(src.ptr, src.size);
    dst_mr = b->register_memory(dst.ptr, dst.size);
  }
};

}  // namespace dualpath::transport::testing
