#pragma once
// A Hugging Face tokenizer.json of the byte-level BPE family (GPT-2, Llama 3, Qwen, DeepSeek), read and run in
// C++ (docs/design.md §18): added and special tokens are cut out first, the rest is normalized (none or NFC),
// split by the pre-tokenizer's pattern, mapped to the byte-level alphabet and merged by rank. What a file asks
// for that this does not do (another model type, byte fallback, stripping added tokens) is refused by name
// when it is loaded, never half-done.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace dualpath::text {

struct tokenizer_parts;  // text/tokenizer_impl.hpp

class tokenizer {
 public:
  // Reads `path` (a tokenizer.json); bad_input naming the file and the field otherwise.
  static result<tokenizer> load(const std::string& path);
  // The same from the file's text; `origin` names it in messages.
  static result<tokenizer> parse(const std::string& json_text, const std::string& origin);

  // The ids of `text`, as Hugging Face's encode(text, add_special_tokens=False): special tokens written in the
  // text are recognized. Ill-formed UTF-8 is bad_input naming its byte offset.
  result<std::vector<int32_t>> encode(std::string_view text) const;
  // The bytes `ids` stand for (special tokens as their text unless `skip_special`); not necessarily whole
  // characters at the end (text/utf8.hpp's utf8_stream makes a stream of them whole).
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const;
  // The bytes of one token; empty for an id outside the vocabulary.
  std::string token_bytes(int32_t id) const;

  // Ids run from 0 to vocab_size() - 1 (the model's vocabulary and the added tokens).
  uint32_t vocab_size() const;
  // The id of an added token by its text ("<|im_end|>"), if the file has one.
  std::optional<int32_t> added_token(std::string_view content) const;
  bool is_special(int32_t id) const;

 private:
  std::shared_ptr<const tokenizer_parts> impl_;
};

}  // namespace dualpath::text
