#include "text/byte_tokenizer.hpp"

#include <nlohmann/json.hpp>

#include "text/byte_level.hpp"

namespace dualpath::text {

std::string byte_tokenizer_json() {
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (int b = 0; b < 256; ++b) vocab[to_byte_level(std::string(1, char(b)))] = b;
  nlohmann::ordered_json added = nlohmann::ordered_json::array();
  int id = 256;
  for (const char* t : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"})
    added.push_back({{"id", id++}, {"content", t}, {"special", true}});
  const nlohmann::ordered_json j = {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::ordered_json::array()}}},
  };
  return j.dump(1);
}

std::string byte_tokenizer_config_json() {
  const nlohmann::ordered_json j = {
      {"bos_token", nullptr},
      {"eos_token", "<|im_end|>"},
      {"chat_template",
       "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
       "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"},
  };
  return j.dump(1);
}

}  // namespace dualpath::text
