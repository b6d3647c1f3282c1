#pragma once
// The parts of a loaded tokenizer (text/tokenizer.hpp), shared by the file reader (tokenizer_file.cpp) and
// the encoder (tokenizer.cpp). Internal to text/.
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "text/split_regex.hpp"
#include "text/tokenizer.hpp"

namespace dualpath::text {

struct added_token_def {
  int32_t id = 0;
  std::string content;
  bool special = false;
};

struct tokenizer_parts {
  // model.vocab: byte-level token text -> id, and back (ids past it are added tokens or unused).
  std::unordered_map<std::string, int32_t> vocab;
  std::vector<std::string> token_text;  // by id; byte-level text, or an added token's content
  std::vector<uint8_t> kind;            // by id: 0 unused, 1 vocabulary, 2 added, 3 added and special
  // model.merges: the pair (left id, right id) -> its rank and the id of the merged token.
  struct merge {
    int32_t rank, merged;
  };
  std::unordered_map<uint64_t, merge> merges;
  bool ignore_merges = false;  // a piece that is a whole vocabulary token is taken as it is (Llama 3)

  // Added tokens by their first byte, longest first: where the text is cut before anything else.
  std::vector<added_token_def> added;
  std::vector<std::vector<size_t>> added_by_first_byte = std::vector<std::vector<size_t>>(256);

  bool nfc = false;                 // normalizer NFC
  std::vector<split_regex> splits;  // pre_tokenizer Split(Isolated) patterns, applied in order
  bool add_prefix_space = false;    // ByteLevel: a space before text that starts without one

  // Pieces seen before (byte-level text -> ids): agents send the same context turn after turn. Bounded.
  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;
  static constexpr size_t cache_limit = 1 << 16;

  static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
};

// Reads the parts from a tokenizer.json's text (tokenizer_file.cpp).
result<std::shared_ptr<tokenizer_parts>> read_tokenizer_file(const std::string& json_text, const std::string& origin);

}  // namespace dualpath::text
