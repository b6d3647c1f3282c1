#pragma once
// The tokenizer of a model directory that brings none (docs/design.md §18): one token per byte (ids 0..255)
// and the ChatML special tokens after them, as a tokenizer.json and a tokenizer_config.json, so catalog models
// (vocabularies of 512 and more) can be served and chatted with.
#include <string>

namespace dualpath::text {

// ids 256, 257, 258: <|endoftext|>, <|im_start|>, <|im_end|>.
std::string byte_tokenizer_json();
// eos <|im_end|> and a ChatML chat_template (its family is chatml_qwen).
std::string byte_tokenizer_config_json();

}  // namespace dualpath::text
