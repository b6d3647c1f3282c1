// text/tokenizer on a small hand-made tokenizer.json: merges by rank, added tokens cut out first, bytes back
// exactly, and every unsupported field refused by name.
#include <doctest/doctest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "text/byte_level.hpp"
#include "text/byte_tokenizer.hpp"
#include "text/chat_template.hpp"
#include "text/tokenizer.hpp"

using namespace dualpath;
using namespace dualpath::text;
using nlohmann::json;

namespace {

// Byte b is token b (by its byte-level character); then four merges and two added tokens.
json small_tokenizer() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[to_byte_level(std::string(1, char(b)))] = b;
  vocab["he"] = 256;
  vocab["ll"] = 257;
  vocab["hell"] = 258;
  vocab[to_byte_level(" ") + "w"] = 259;
  json merges = json::array({"h e", "l l", "he ll", json::array({to_byte_level(" "), "w"})});
  return {
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
      {"added_tokens", json::array({{{"id", 300}, {"content", "<|end|>"}, {"special", true}},
                                    {{"id", 301}, {"content", "<tool>"}, {"special", false}}})},
  };
}

tokenizer load(const json& j) { return value_or_throw(tokenizer::parse(j.dump(), "small.json")); }

std::vector<int32_t> ids(const tokenizer& t, const std::string& text) { return value_or_throw(t.encode(text)); }

}  // namespace

TEST_CASE("tokenizer: pieces merge by rank, added tokens are cut out before, and decoding gives the bytes back") {
  const tokenizer t = load(small_tokenizer());
  CHECK(t.vocab_size() == 302);
  CHECK(ids(t, "hello") == std::vector<int32_t>{258, 'o'});  // he + ll, then hell
  CHECK(ids(t, "hello world<|end|>") == std::vector<int32_t>{258, 'o', 259, 'o', 'r', 'l', 'd', 300});
  CHECK(ids(t, "<tool>x<|end|><|end|>") == std::vector<int32_t>{301, 'x', 300, 300});
  CHECK(ids(t, "<|end").size() == 5);  // not a whole added token: plain text
  CHECK(ids(t, "").empty());
  const std::string text = "hello \xe4\xbd\xa0\xe5\xa5\xbd\t\n  <|end|> \xf0\x9f\x98\x80";
  CHECK(t.decode(ids(t, text)) == text);
  CHECK(t.decode(ids(t, text), /*skip_special*/ true) == "hello \xe4\xbd\xa0\xe5\xa5\xbd\t\n   \xf0\x9f\x98\x80");
  CHECK(t.is_special(300));
  CHECK_FALSE(t.is_special(301));
  CHECK(t.added_token("<|end|>") == 300);
  CHECK_FALSE(t.added_token("<|nope|>").has_value());
  CHECK(t.token_bytes(259) == " w");
  CHECK(t.token_bytes(299).empty());  // an id nothing was given
}

TEST_CASE("tokenizer: ill-formed UTF-8 is refused with its offset") {
  const tokenizer t = load(small_tokenizer());
  const auto r = t.encode("abc\xff");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == errc::bad_input);
  CHECK(r.error().message().find("byte 3") != std::string::npos);
}

TEST_CASE("tokenizer: what the file asks for and the tokenizer does not do is refused by name") {
  const std::pair<std::function<void(json&)>, const char*> cases[] = {
      {[](json& j) { j["model"]["type"] = "WordPiece"; }, "model.type"},
      {[](json& j) { j["model"]["byte_fallback"] = true; }, "model.byte_fallback"},
      {[](json& j) { j["model"]["dropout"] = 0.1; }, "model.dropout"},
      {[](json& j) { j["added_tokens"][0]["lstrip"] = true; }, "added_tokens[<|end|>].lstrip"},
      {[](json& j) {
         j["normalizer"] = {{"type", "NFKC"}};
       },
       "normalizer.type"},
      {[](json& j) {
         j["pre_tokenizer"] = {{"type", "Whitespace"}};
       },
       "pre_tokenizer.type"},
      {[](json& j) {
         j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(?<"}}}, {"behavior", "Isolated"}};
       },
       "split pattern"},
      {[](json& j) { j["model"]["merges"].push_back("q zz"); }, "model.merges[4]"},
      {[](json& j) { j["model"]["vocab"].erase(to_byte_level(std::string(1, '\0'))); }, "byte 0x00"},
      {[](json& j) { j.erase("model"); }, "model"},
  };
  for (const auto& [edit, field] : cases) {
    json j = small_tokenizer();
    edit(j);
    const auto r = tokenizer::parse(j.dump(), "small.json");
    CAPTURE(field);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message().find("small.json") != std::string::npos);
    CHECK(r.error().message().find(field) != std::string::npos);
  }
  CHECK_FALSE(tokenizer::parse("{not json", "broken.json").ok());
  const auto missing = tokenizer::load("/no/such/tokenizer.json");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message().find("/no/such/tokenizer.json") != std::string::npos);
}

TEST_CASE("tokenizer: the byte-level default has one id per byte and ChatML's tokens, and renders as ChatML") {
  const tokenizer t = value_or_throw(tokenizer::parse(byte_tokenizer_json(), "byte tokenizer"));
  CHECK(t.vocab_size() == 259);
  CHECK(ids(t, "<|im_start|>user\nhi<|im_end|>") == std::vector<int32_t>{257, 'u', 's', 'e', 'r', '\n', 'h', 'i', 258});
  CHECK(t.decode(ids(t, "caf\xc3\xa9")) == "caf\xc3\xa9");
  const auto config = nlohmann::json::parse(byte_tokenizer_config_json());
  CHECK(detect_chat_family(config["chat_template"].get<std::string>(), "cfg").value() == chat_family::chatml_qwen);
  CHECK(config["eos_token"] == "<|im_end|>");
}
