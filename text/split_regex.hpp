#pragma once
// A pre-tokenizer's split pattern (docs/design.md §18), compiled once with PCRE2 in UTF mode with Unicode
// properties (\p{L}, \s as Unicode whitespace, look-ahead), the syntax Hugging Face's patterns are written in.
// PCRE2's types stay in split_regex.cpp.
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.hpp"

namespace dualpath::text {

class split_regex {
 public:
  // `pattern` compiled; bad_input naming `origin` and the offset where PCRE2 stopped otherwise.
  static result<split_regex> compile(const std::string& pattern, const std::string& origin);

  // Cuts well-formed UTF-8 `text` into pieces the way Hugging Face's Split(behavior: Isolated) does: every
  // match is a piece, and so is every stretch between matches. Pieces come in order and cover all of `text`.
  void split(std::string_view text, const std::function<void(std::string_view)>& piece) const;

 private:
  struct code;
  std::shared_ptr<const code> code_;
};

// `text` in Unicode Normalization Form C (what a tokenizer.json "NFC" normalizer does), or bad_input.
result<std::string> nfc(std::string_view text);

}  // namespace dualpath::text
