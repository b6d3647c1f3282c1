#pragma once
// Valid inputs for every harness, built by the real encoders and writers (so a seed is exactly what a peer,
// a trace writer or a block store produces), and the inputs that once broke a decoder.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dualpath::fuzz {

using bytes = std::vector<uint8_t>;

// The seeds of harness `name` (harnesses.hpp); every one must be accepted.
std::vector<bytes> seeds_for(std::string_view name);

// The syntax tokens of a text decoder (JSON for the traces, TOML for the cluster file), for the mutators.
std::vector<std::string> tokens_for(std::string_view name);

// An input that crashed, hung or misbehaved before its fix, with the answer it must get now.
struct regression {
  const char* harness;
  const char* what;  // the bug, in a few words
  bytes input;
  int expect;  // accepted or refused
};
std::vector<regression> regressions();

}  // namespace dualpath::fuzz
