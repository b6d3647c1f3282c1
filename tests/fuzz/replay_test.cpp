// The seeded replay of every fuzz harness (docs/design.md §16, "Fuzzing"): a few valid seeds per decoder,
// then a fixed number of deterministic mutants of them. Every input must be accepted or refused with the
// decoder's documented error; an exception of any other type escaping a harness is a bug. The long,
// coverage-guided campaigns run the same harnesses under libFuzzer (scripts/fuzz.sh).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

#include "tests/fuzz/harnesses.hpp"
#include "tests/fuzz/mutator.hpp"
#include "tests/fuzz/seeds.hpp"

using namespace dualpath::fuzz;

namespace {

// Mutants per decoder: the whole suite stays well under 30 s on two cores in a Release build.
constexpr int inputs_per_decoder = 20000;
constexpr uint64_t replay_seed = 0x6675'7a7a'2d37ull;  // fixed: the suite is deterministic
constexpr size_t pool_limit = 64;                      // accepted mutants kept to mutate further

// Runs one input; an escaping exception fails the test with the input's bytes in hex.
int run_one(const harness& h, const bytes& input, const std::string& what) {
  const std::string name = h.name;  // doctest prints a const char* as a pointer
  try {
    return h.run(input.data(), input.size());
  } catch (const std::exception& e) {
    std::string hex;
    for (size_t i = 0; i < input.size() && i < 256; ++i) {
      char b[4];
      std::snprintf(b, sizeof b, "%02x", input[i]);
      hex += b;
    }
    FAIL_CHECK(name << ": " << what << " (" << input.size() << " bytes) escaped with '" << std::string(e.what())
                    << "'; input " << hex);
  } catch (...) {
    FAIL_CHECK(name << ": " << what << " escaped with an exception that is neither documented nor std::");
  }
  return -1;
}

}  // namespace

TEST_CASE("every fuzz harness has seeds its decoder accepts") {
  for (const auto& h : all_harnesses()) {
    const auto seeds = seeds_for(h.name);
    const std::string name = h.name;
    CHECK_MESSAGE(seeds.size() >= 2, name);
    for (size_t i = 0; i < seeds.size(); ++i)
      CHECK_MESSAGE(run_one(h, seeds[i], "a seed") == accepted, name << " seed " << i);
  }
}

TEST_CASE("inputs that once broke a decoder get the answer they must") {
  for (const auto& r : regressions()) {
    const harness* h = find_harness(r.harness);
    REQUIRE_MESSAGE(h, std::string(r.harness));
    CHECK_MESSAGE(run_one(*h, r.input, r.what) == r.expect, std::string(r.harness) << ": " << std::string(r.what));
  }
}

TEST_CASE("mutated inputs are accepted or refused, never anything else") {
  const auto& list = all_harnesses();
  for (size_t k = 0; k < list.size(); ++k) {
    const harness& h = list[k];
    std::vector<bytes> pool = seeds_for(h.name);
    for (const auto& r : regressions())
      if (std::string(r.harness) == h.name) pool.push_back(r.input);
    const auto tokens = h.text ? tokens_for(h.name) : std::vector<std::string>{};
    mutator m(replay_seed + k);
    int refused_count = 0, accepted_count = 0, escaped = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < inputs_per_decoder; ++i) {
      bytes input = m.next(pool, tokens);
      const int answer = run_one(h, input, "a mutant");
      if (answer == refused) ++refused_count;
      else if (answer == accepted) ++accepted_count;
      else ++escaped;
      // An accepted mutant is a new valid input: mutating it reaches further into the decoder.
      if (answer == accepted && pool.size() < pool_limit && input.size() < (1u << 16)) pool.push_back(std::move(input));
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("fuzz %-17s %6d inputs  %6d refused  %6d accepted  %d escaped  %.2f s\n", h.name, inputs_per_decoder,
                refused_count, accepted_count, escaped, s);
    CHECK_MESSAGE(escaped == 0, std::string(h.name));
  }
}
