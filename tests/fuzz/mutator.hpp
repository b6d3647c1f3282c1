#pragma once
// A deterministic mutator for the replay test (tests/fuzz/replay_test.cpp): the same seed gives the same
// inputs on every platform. It does what a coverage-blind fuzzer can: flip bits, set bytes and words to
// the values decoders get wrong (0, all ones, sign bits, lengths near the input's own), cut, insert,
// erase and duplicate ranges, splice two inputs, and for text decoders insert their syntax tokens.
#include <cstdint>
#include <string>
#include <vector>

namespace dualpath::fuzz {

class mutator {
 public:
  explicit mutator(uint64_t seed) : state_(seed) {}

  // A mutant of `pool[i]` for a random i: one to four mutations stacked; `tokens` may be empty.
  std::vector<uint8_t> next(const std::vector<std::vector<uint8_t>>& pool, const std::vector<std::string>& tokens);

  uint64_t random();  // splitmix64
  uint64_t below(uint64_t n) { return n ? random() % n : 0; }

 private:
  void mutate_once(std::vector<uint8_t>& x, const std::vector<std::vector<uint8_t>>& pool,
                   const std::vector<std::string>& tokens);
  uint64_t state_;
};

}  // namespace dualpath::fuzz
