#pragma once
// The ids behind the server's own answers (docs/design.md §18). An agent sends its whole conversation back
// every turn, the server's answers as text; re-tokenizing that text need not give the ids the model generated
// (a character split over tokens, bytes that were not UTF-8, another merge), and every block from the first
// difference on would miss the KV the decode engine persisted. An assistant message whose content is exactly
// the text of an earlier answer, after exactly that answer's prompt, is encoded to the answer's generated ids
// instead. The prompt is part of the key because different ids can read as the same text (bytes that are not
// UTF-8 all read as U+FFFD), and the same answer in another conversation may have other ids. Bounded: the
// least recently used answers are forgotten. Thread-safe.
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.hpp"
#include "serve/served_model.hpp"

namespace dualpath::serve {

class generated_ids {
 public:
  explicit generated_ids(size_t capacity = 4096) : capacity_(capacity) {}
  // `text` was answered to `prompt` from `ids` (the content's ids, without the token that ended the turn).
  void remember(const std::vector<int32_t>& prompt, const std::string& text, std::vector<int32_t> ids);
  // Whether some answer had this text: only then is the prompt before it worth encoding to look it up.
  bool knows(const std::string& text) const;
  std::optional<std::vector<int32_t>> find(const std::vector<int32_t>& prompt, const std::string& text);
  // The answers outlive the server with its store (docs/design.md §18): written as one JSON file (whole, by
  // a rename) when it stops, read back when it starts. load: not_found without a file, corrupt for a file
  // that is not one of these (nothing is taken from it then but what came before the fault).
  status save(const std::string& path) const;
  status load(const std::string& path);

 private:
  struct answer {
    std::string text;
    uint64_t prompt = 0;  // hash of the prompt's ids
    std::vector<int32_t> ids;
  };
  using entry = std::list<answer>::iterator;
  entry locate(const std::string& text, uint64_t prompt);  // recent_.end() when unknown
  void remember_hashed(uint64_t prompt, const std::string& text, std::vector<int32_t> ids);
  size_t capacity_;
  mutable std::mutex mutex_;
  std::list<answer> recent_;  // most recently used first
  std::unordered_multimap<std::string, entry> by_text_;
};

// The ids of `prompt` in `model`'s template: its text encoded piece by piece, with each assistant content that
// `answers` knows spliced in as the ids it was generated from (right after the family's assistant header).
// bad_input as the tokenizer's.
result<std::vector<int32_t>> encode_conversation(const served_model& model, const text::chat_prompt& prompt,
                                                 generated_ids& answers);

}  // namespace dualpath::serve
