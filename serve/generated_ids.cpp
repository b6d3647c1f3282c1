#include "serve/generated_ids.hpp"

#include <xxhash.h>

namespace dualpath::serve {

namespace {

std::string key_of(const std::vector<int32_t>& prompt, const std::string& text) {
  const uint64_t h = XXH3_64bits(prompt.data(), prompt.size() * sizeof(int32_t));
  return std::string(reinterpret_cast<const char*>(&h), sizeof h) + text;
}

}  // namespace

void generated_ids::remember(const std::vector<int32_t>& prompt, const std::string& content, std::vector<int32_t> ids) {
  if (content.empty() || ids.empty()) return;
  const std::string text = key_of(prompt, content);
  std::lock_guard lock(mutex_);
  if (const auto it = by_text_.find(text); it != by_text_.end()) {
    recent_.erase(it->second);
    by_text_.erase(it);
  }
  recent_.emplace_front(text, std::move(ids));
  by_text_[text] = recent_.begin();
  if (recent_.size() > capacity_) {
    by_text_.erase(recent_.back().first);
    recent_.pop_back();
  }
}

std::optional<std::vector<int32_t>> generated_ids::find(const std::vector<int32_t>& prompt,
                                                        const std::string& content) {
  const std::string text = key_of(prompt, content);
  std::lock_guard lock(mutex_);
  const auto it = by_text_.find(text);
  if (it == by_text_.end()) return std::nullopt;
  recent_.splice(recent_.begin(), recent_, it->second);
  return it->second->second;
}

size_t generated_ids::size() const {
  std::lock_guard lock(mutex_);
  return recent_.size();
}

result<std::vector<int32_t>> encode_conversation(const served_model& model, const text::chat_prompt& prompt,
                                                 generated_ids& answers, uint32_t* spliced) {
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
    if (m.role != "assistant" || m.content.empty() || !m.tool_calls.empty()) continue;
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
    if (spliced) ++*spliced;
  }
  if (auto s = encode_piece(rendered.size()); !s.ok()) return s;
  return ids;
}

}  // namespace dualpath::serve
