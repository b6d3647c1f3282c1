#include "text/tokenizer.hpp"

#include <fmt/format.h>

#include <limits>

#include "core/read_file.hpp"
#include "text/byte_level.hpp"
#include "text/tokenizer_impl.hpp"
#include "text/utf8.hpp"

namespace dualpath::text {

namespace {

// The byte-level piece `piece` merged by rank: start from its characters and merge, again and again, the
// adjacent pair of the lowest rank (the leftmost of equals), as Hugging Face's BPE does.
std::vector<int32_t> merge_piece(const tokenizer_parts& t, const std::string& piece) {
  if (t.ignore_merges) {
    if (const auto it = t.vocab.find(piece); it != t.vocab.end()) return {it->second};
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < piece.size();) {
    const size_t n = (uint8_t(piece[i]) & 0x80) ? 2 : 1;  // the byte-level alphabet is below U+0800
    // Every character of the alphabet is a token of a byte-level vocabulary (checked when it was read).
    ids.push_back(t.vocab.at(piece.substr(i, n)));
    i += n;
  }
  while (ids.size() > 1) {
    int32_t best_rank = std::numeric_limits<int32_t>::max(), merged = -1;
    size_t at = 0;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      const auto it = t.merges.find(tokenizer_parts::pair_key(ids[i], ids[i + 1]));
      if (it != t.merges.end() && it->second.rank < best_rank) {
        best_rank = it->second.rank;
        merged = it->second.merged;
        at = i;
      }
    }
    if (merged < 0) break;
    ids[at] = merged;
    ids.erase(ids.begin() + long(at) + 1);
  }
  return ids;
}

// A stretch of text between added tokens: normalized, split, mapped, merged.
void encode_plain(const tokenizer_parts& t, std::string_view text, std::vector<int32_t>& out) {
  if (text.empty()) return;
  std::string normal;
  if (t.nfc) {
    normal = value_or_throw(nfc(text));
    text = normal;
  }
  std::string prefixed;
  if (t.add_prefix_space && text.front() != ' ') {
    prefixed = " " + std::string(text);
    text = prefixed;
  }
  // Each pattern splits the pieces the one before it made; the last pieces are merged.
  std::vector<std::string_view> pieces{text};
  for (const auto& re : t.splits) {
    std::vector<std::string_view> finer;
    for (const auto p : pieces) re.split(p, [&](std::string_view s) { finer.push_back(s); });
    pieces = std::move(finer);
  }
  for (const auto p : pieces) {
    const std::string mapped = to_byte_level(p);
    {
      std::lock_guard lock(t.cache_mutex);
      if (const auto it = t.cache.find(mapped); it != t.cache.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        continue;
      }
    }
    auto ids = merge_piece(t, mapped);
    out.insert(out.end(), ids.begin(), ids.end());
    std::lock_guard lock(t.cache_mutex);
    if (t.cache.size() >= tokenizer_parts::cache_limit) t.cache.clear();
    t.cache.emplace(mapped, std::move(ids));
  }
}

// The added token that starts at text[i], longest first; nullptr when none does.
const added_token_def* added_at(const tokenizer_parts& t, std::string_view text, size_t i) {
  for (const size_t k : t.added_by_first_byte[uint8_t(text[i])]) {
    const auto& a = t.added[k];
    if (text.compare(i, a.content.size(), a.content) == 0) return &a;
  }
  return nullptr;
}

}  // namespace

result<tokenizer> tokenizer::load(const std::string& path) {
  const auto text = read_file(path);
  if (!text) return status(errc::bad_input, fmt::format("tokenizer file '{}' cannot be opened", path));
  return parse(*text, path);
}

result<tokenizer> tokenizer::parse(const std::string& json_text, const std::string& origin) {
  auto parts = read_tokenizer_file(json_text, origin);
  if (!parts) return parts.error();
  // The merge loop looks every character of a piece up: a vocabulary must hold the whole alphabet.
  for (int b = 0; b < 256; ++b) {
    const std::string c = to_byte_level(std::string(1, char(b)));
    if (!parts.value()->vocab.count(c))
      return status(errc::bad_input, fmt::format("{}: model.vocab: no token for byte 0x{:02x} ('{}'): not a "
                                                 "byte-level vocabulary",
                                                 origin, b, c));
  }
  tokenizer t;
  t.impl_ = std::move(parts.value());
  return t;
}

result<std::vector<int32_t>> tokenizer::encode(std::string_view text) const {
  if (const auto bad = first_invalid_utf8(text))
    return status(errc::bad_input, fmt::format("text is not valid UTF-8 (byte {} of {})", *bad, text.size()));
  const auto& t = *impl_;
  std::vector<int32_t> out;
  size_t plain = 0;  // where the text since the last added token began
  for (size_t i = 0; i < text.size();) {
    const added_token_def* a = t.added.empty() ? nullptr : added_at(t, text, i);
    if (!a) {
      ++i;
      continue;
    }
    encode_plain(t, text.substr(plain, i - plain), out);
    out.push_back(a->id);
    i += a->content.size();
    plain = i;
  }
  encode_plain(t, text.substr(plain), out);
  return out;
}

std::string tokenizer::token_bytes(int32_t id) const {
  const auto& t = *impl_;
  if (id < 0 || size_t(id) >= t.kind.size() || t.kind[size_t(id)] == 0) return {};
  const std::string& s = t.token_text[size_t(id)];
  if (t.kind[size_t(id)] != 1) return s;  // added tokens are their own text
  return from_byte_level(s).value_or(s);
}

std::string tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string out;
  for (const int32_t id : ids) {
    if (skip_special && is_special(id)) continue;
    out += token_bytes(id);
  }
  return out;
}

uint32_t tokenizer::vocab_size() const { return uint32_t(impl_->kind.size()); }

std::optional<int32_t> tokenizer::added_token(std::string_view content) const {
  for (const auto& a : impl_->added)
    if (a.content == content) return a.id;
  return std::nullopt;
}

bool tokenizer::is_special(int32_t id) const {
  return id >= 0 && size_t(id) < impl_->kind.size() && impl_->kind[size_t(id)] == 3;
}

}  // namespace dualpath::text
