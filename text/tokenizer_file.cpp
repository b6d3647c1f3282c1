// Reading a tokenizer.json into the parts the encoder runs (text/tokenizer_impl.hpp). Every field that would
// change the ids is either understood here or refused by name.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "text/tokenizer_impl.hpp"

namespace dualpath::text {

namespace {

using json = nlohmann::json;

struct file_reader {
  const std::string& origin;
  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw user_error(fmt::format("{}: {}: {}", origin, field, why));
  }
  // A key that must be absent, null, false, or the one harmless value given.
  void require_off(const json& j, const char* key, const std::string& field, const json& harmless = nullptr) const {
    if (!j.contains(key)) return;
    const json& v = j[key];
    if (v.is_null() || v == false || v == harmless) return;
    fail(field + "." + key,
         "is " + v.dump() + "; only " + (harmless.is_null() ? "null" : harmless.dump()) + " is supported");
  }
};

// GPT-2's pattern: what ByteLevel(use_regex: true) splits by.
const char* gpt2_pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

void read_normalizer(const file_reader& r, const json& n, tokenizer_parts& t) {
  if (n.is_null()) return;
  const std::string type = n.value("type", "");
  if (type == "NFC") {
    t.nfc = true;
  } else if (type == "Sequence") {
    for (const auto& part : n.value("normalizers", json::array())) read_normalizer(r, part, t);
  } else {
    r.fail("normalizer.type", "'" + type + "' is not supported (none, NFC or a Sequence of them)");
  }
}

void read_pre_tokenizer(const file_reader& r, const json& p, tokenizer_parts& t) {
  if (p.is_null()) return;
  const std::string type = p.value("type", "");
  if (type == "Sequence") {
    for (const auto& part : p.value("pretokenizers", json::array())) read_pre_tokenizer(r, part, t);
  } else if (type == "Split") {
    if (p.value("behavior", "") != "Isolated") r.fail("pre_tokenizer.behavior", "only Isolated is supported");
    if (p.value("invert", false)) r.fail("pre_tokenizer.invert", "only false is supported");
    const json& pattern = p["pattern"];
    if (!pattern.is_object() || !pattern.contains("Regex"))
      r.fail("pre_tokenizer.pattern", "only a Regex pattern is supported");
    t.splits.push_back(value_or_throw(split_regex::compile(pattern["Regex"].get<std::string>(), r.origin)));
  } else if (type == "ByteLevel") {
    t.add_prefix_space = p.value("add_prefix_space", false);
    if (p.value("use_regex", true)) t.splits.push_back(value_or_throw(split_regex::compile(gpt2_pattern, r.origin)));
  } else {
    r.fail("pre_tokenizer.type", "'" + type + "' is not supported (Split, ByteLevel or a Sequence of them)");
  }
}

void read_model(const file_reader& r, const json& m, tokenizer_parts& t) {
  if (m.value("type", "") != "BPE") r.fail("model.type", "only BPE is supported");
  r.require_off(m, "dropout", "model");
  r.require_off(m, "byte_fallback", "model");
  r.require_off(m, "unk_token", "model");
  r.require_off(m, "continuing_subword_prefix", "model", "");
  r.require_off(m, "end_of_word_suffix", "model", "");
  t.ignore_merges = m.value("ignore_merges", false);
  const json& vocab = m["vocab"];
  if (!vocab.is_object() || vocab.empty()) r.fail("model.vocab", "must be an object of token -> id");
  for (const auto& [text, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (1 << 24))
      r.fail("model.vocab." + text, "id must be an integer in 0..16777215");
    t.vocab.emplace(text, id.get<int32_t>());
  }
  int32_t rank = 0;
  for (const auto& merge : m["merges"]) {
    std::string a, b;
    if (merge.is_string()) {  // "a b" (older files)
      const auto s = merge.get<std::string>();
      const size_t sp = s.find(' ', 1);
      if (sp == std::string::npos) r.fail(fmt::format("model.merges[{}]", rank), "must be 'left right'");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (merge.is_array() && merge.size() == 2) {  // ["a", "b"]
      a = merge[0].get<std::string>();
      b = merge[1].get<std::string>();
    } else {
      r.fail(fmt::format("model.merges[{}]", rank), "must be 'left right' or [left, right]");
    }
    const auto ia = t.vocab.find(a), ib = t.vocab.find(b), im = t.vocab.find(a + b);
    if (ia == t.vocab.end() || ib == t.vocab.end() || im == t.vocab.end())
      r.fail(fmt::format("model.merges[{}]", rank), "names a token the vocabulary does not have");
    t.merges.emplace(tokenizer_parts::pair_key(ia->second, ib->second), tokenizer_parts::merge{rank, im->second});
    ++rank;
  }
}

void read_added_tokens(const file_reader& r, const json& list, tokenizer_parts& t) {
  for (const auto& a : list) {
    const std::string content = a.value("content", "");
    const std::string field = "added_tokens[" + content + "]";
    if (content.empty()) r.fail("added_tokens", "a token without content");
    for (const char* key : {"lstrip", "rstrip", "single_word", "normalized"}) r.require_off(a, key, field);
    t.added.push_back({a.value("id", -1), content, a.value("special", false)});
    if (t.added.back().id < 0) r.fail(field + ".id", "must be a non-negative integer");
  }
  std::sort(t.added.begin(), t.added.end(),
            [](const auto& x, const auto& y) { return x.content.size() > y.content.size(); });
  for (size_t i = 0; i < t.added.size(); ++i) t.added_by_first_byte[uint8_t(t.added[i].content[0])].push_back(i);
}

}  // namespace

result<std::shared_ptr<tokenizer_parts>> read_tokenizer_file(const std::string& json_text, const std::string& origin) {
  auto t = std::make_shared<tokenizer_parts>();
  const file_reader r{origin};
  try {
    const json j = json::parse(json_text);
    if (!j.is_object()) r.fail("top level", "must be an object");
    read_normalizer(r, j.value("normalizer", json()), *t);
    read_pre_tokenizer(r, j.value("pre_tokenizer", json()), *t);
    if (!j.contains("model")) r.fail("model", "missing");
    read_model(r, j["model"], *t);
    read_added_tokens(r, j.value("added_tokens", json::array()), *t);
  } catch (const json::exception& e) {
    return status(errc::bad_input, fmt::format("{}: {}", origin, e.what()));
  } catch (const user_error& e) {
    return status(errc::bad_input, e.what());
  }
  int32_t top = -1;
  for (const auto& [text, id] : t->vocab) top = std::max(top, id);
  for (const auto& a : t->added) top = std::max(top, a.id);
  t->token_text.assign(size_t(top) + 1, std::string());
  t->kind.assign(size_t(top) + 1, 0);
  for (const auto& [text, id] : t->vocab) {
    t->token_text[size_t(id)] = text;
    t->kind[size_t(id)] = 1;
  }
  for (const auto& a : t->added) {
    t->token_text[size_t(a.id)] = a.content;
    t->kind[size_t(a.id)] = a.special ? 3 : 2;
  }
  return t;
}

}  // namespace dualpath::text
