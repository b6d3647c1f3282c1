#include "serve/generated_ids.hpp"

#include <xxhash.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace dualpath::serve {

namespace {

uint64_t hash_of(const std::vector<int32_t>& prompt) {
  return XXH3_64bits(prompt.data(), prompt.size() * sizeof(int32_t));
}

}  // namespace

generated_ids::entry generated_ids::locate(const std::string& text, uint64_t prompt) {
  const auto [first, last] = by_text_.equal_range(text);
  for (auto it = first; it != last; ++it)
    if (it->second->prompt == prompt) return it->second;
  return recent_.end();
}

void generated_ids::remember(const std::vector<int32_t>& prompt, const std::string& text, std::vector<int32_t> ids) {
  if (text.empty() || ids.empty()) return;
  remember_hashed(hash_of(prompt), text, std::move(ids));
}

void generated_ids::remember_hashed(uint64_t h, const std::string& text, std::vector<int32_t> ids) {
  std::lock_guard lock(mutex_);
  const auto forget = [&](entry e) {
    const auto [first, last] = by_text_.equal_range(e->text);
    for (auto it = first; it != last; ++it)
      if (it->second == e) {
        by_text_.erase(it);
        break;
      }
    recent_.erase(e);
  };
  if (const auto known = locate(text, h); known != recent_.end()) forget(known);
  recent_.push_front({text, h, std::move(ids)});
  by_text_.emplace(text, recent_.begin());
  if (recent_.size() > capacity_) forget(std::prev(recent_.end()));
}

status generated_ids::save(const std::string& path) const {
  nlohmann::json all = nlohmann::json::array();
  {
    std::lock_guard lock(mutex_);
    for (auto it = recent_.rbegin(); it != recent_.rend(); ++it)  // oldest first: a load keeps the order
      all.push_back({{"prompt", it->prompt}, {"text", it->text}, {"ids", it->ids}});
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << all.dump();
    if (!out.flush()) return {errc::io, "cannot write the answers' ids to " + tmp};
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);  // whole or not at all
  if (ec) return {errc::io, "cannot rename " + tmp + " to " + path + ": " + ec.message()};
  return {};
}

status generated_ids::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {errc::not_found, path + ": no answers' ids saved"};
  try {
    const auto all = nlohmann::json::parse(in);
    for (const auto& a : all) {
      auto ids = a.at("ids").get<std::vector<int32_t>>();
      const auto text = a.at("text").get<std::string>();
      if (!text.empty() && !ids.empty()) remember_hashed(a.at("prompt").get<uint64_t>(), text, std::move(ids));
    }
  } catch (const nlohmann::json::exception& e) {
    return {errc::corrupt, path + ": " + e.what()};
  }
  return {};
}

bool generated_ids::knows(const std::string& text) const {
  std::lock_guard lock(mutex_);
  return by_text_.count(text) > 0;
}

std::optional<std::vector<int32_t>> generated_ids::find(const std::vector<int32_t>& prompt, const std::string& text) {
  const uint64_t h = hash_of(prompt);
  std::lock_guard lock(mutex_);
  const auto known = locate(text, h);
  if (known == recent_.end()) return std::nullopt;
  recent_.splice(recent_.begin(), recent_, known);
  return known->ids;
}

result<std::vector<int32_t>> encode_conversation(const served_model& model, const text::chat_prompt& prompt,
                                                 generated_ids& answers) {
  const std::string rendered = text::render_chat(model.family, prompt);
  const std::string header(text::assistant_header(model.family));
  std::vector<int32_t> ids;
  size_t cursor = 0;
  // Text before a spliced answer ends with the assistant header, exactly as the turn's own prompt ended; the
  // text after it starts with the family's end-of-turn token. So each piece encodes as it did in the turns
  // that made these blocks.
  const auto encode_piece = [&](size_t end) -> status {
    auto piece = model.tokenizer.encode(std::string_view(rendered).substr(cursor, end - cursor));
    if (!piece) return piece.error();
    ids.insert(ids.end(), piece.value().begin(), piece.value().end());
    return {};
  };
  for (const auto& m : prompt.messages) {
    // An answer this server never gave is not looked up: encoding the text before it just to find that out
    // would encode a long conversation's history once per unknown answer.
    if (m.role != "assistant" || m.content.empty() || !m.tool_calls.empty() || !answers.knows(m.content)) continue;
    const size_t at = rendered.find(header + m.content, cursor);
    if (at == std::string::npos) continue;  // the template wrote it otherwise (trimmed, thinking removed)
    const size_t before = ids.size();
    if (auto s = encode_piece(at + header.size()); !s.ok()) return s;
    const auto known = answers.find(ids, m.content);  // answered to the ids before it
    if (!known) {
      ids.resize(before);  // encoded with what follows instead
      continue;
    }
    ids.insert(ids.end(), known->begin(), known->end());
    cursor = at + header.size() + m.content.size();
  }
  if (auto s = encode_piece(rendered.size()); !s.ok()) return s;
  return ids;
}

}  // namespace dualpath::serve
