#pragma once
// The model a server answers as (docs/design.md §18): its name in the API, its tokenizer and chat template
// family, from the model directory's tokenizer.json and tokenizer_config.json, or, for a catalog model or a
// directory without them, the byte-level tokenizer and ChatML.
#include <string>

#include "text/chat_template.hpp"
#include "text/tokenizer.hpp"

namespace dualpath::serve {

struct served_model {
  std::string name;  // what `model` must say in a request and /v1/models lists
  text::tokenizer tokenizer;
  text::chat_family family = text::chat_family::chatml_qwen;
  std::string bos_token;
  std::vector<int32_t> stop_ids;  // the special tokens: a turn ends after generating one (the end of a turn)
};

// `model` is the cluster file's model.name (a catalog name or a directory); `chat_template` a family name to
// use instead of the directory's ("" = its own). user_error naming the file when a tokenizer cannot be read,
// its template is of no known family, or its ids do not fit the model's `vocab`.
served_model load_served_model(const std::string& model, const std::string& chat_template, uint32_t vocab);

}  // namespace dualpath::serve
