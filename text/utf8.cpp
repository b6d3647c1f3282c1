#include "text/utf8.hpp"

#include <cstdint>

namespace dualpath::text {

namespace {

constexpr std::string_view replacement = "\xef\xbf\xbd";  // U+FFFD

// What stands at s[i]: a well-formed character of `length` bytes, an ill-formed one whose maximal
// subpart (the bytes that began a character before it went wrong) is `length` bytes, or the well-formed
// beginning of a character that `s` cuts off.
struct sequence {
  enum kind_t { character, ill_formed, cut_off } kind;
  size_t length;
};

sequence sequence_at(std::string_view s, size_t i) {
  const uint8_t c = uint8_t(s[i]);
  if (c < 0x80) return {sequence::character, 1};
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xbf;  // the range of the second byte (Unicode Table 3-7)
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;  // no surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;  // nothing past U+10FFFF
  } else {
    return {sequence::ill_formed, 1};
  }
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) return {sequence::cut_off, k};
    const uint8_t x = uint8_t(s[i + k]);
    if (x < (k == 1 ? lo : 0x80) || x > (k == 1 ? hi : 0xbf)) return {sequence::ill_formed, k};
  }
  return {sequence::character, n};
}

}  // namespace

std::optional<size_t> first_invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto q = sequence_at(s, i);
    if (q.kind != sequence::character) return i;
    i += q.length;
  }
  return std::nullopt;
}

std::string utf8_stream::push(std::string_view bytes) {
  held_.append(bytes);
  std::string out;
  size_t i = 0;
  while (i < held_.size()) {
    const auto q = sequence_at(held_, i);
    if (q.kind == sequence::cut_off) break;                  // the rest of this character is still to come
    if (q.kind == sequence::ill_formed) out += replacement;  // one U+FFFD for its maximal subpart
    else out.append(held_, i, q.length);
    i += q.length;
  }
  held_.erase(0, i);
  return out;
}

std::string utf8_stream::finish() {
  std::string out;
  if (!held_.empty()) out = replacement;
  held_.clear();
  return out;
}

}  // namespace dualpath::text
