#include "text/byte_level.hpp"

#include <array>
#include <cstdint>

namespace dualpath::text {

namespace {

// Printable Latin-1 bytes stand for themselves; the others (controls, space, DEL, NBSP, soft hyphen) take
// the code points from U+0100 on, in byte order.
struct alphabet {
  std::array<uint32_t, 256> code_of{};
  std::array<int16_t, 512> byte_of{};  // by code point; -1 outside the alphabet
  alphabet() {
    byte_of.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      code_of[b] = printable ? b : next++;
      byte_of[code_of[b]] = int16_t(b);
    }
  }
};

const alphabet& table() {
  static const alphabet a;
  return a;
}

void append_code_point(std::string& out, uint32_t cp) {  // cp < 0x800: one or two bytes
  if (cp < 0x80) {
    out += char(cp);
  } else {
    out += char(0xc0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3f));
  }
}

}  // namespace

std::string to_byte_level(std::string_view bytes) {
  const auto& t = table();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) append_code_point(out, t.code_of[uint8_t(c)]);
  return out;
}

std::optional<std::string> from_byte_level(std::string_view chars) {
  const auto& t = table();
  std::string out;
  out.reserve(chars.size());
  for (size_t i = 0; i < chars.size();) {
    const uint8_t c = uint8_t(chars[i]);
    uint32_t cp = 0;
    if (c < 0x80) {
      cp = c;
      i += 1;
    } else if ((c & 0xe0) == 0xc0 && i + 1 < chars.size()) {
      cp = (uint32_t(c & 0x1f) << 6) | (uint8_t(chars[i + 1]) & 0x3f);
      i += 2;
    } else {
      return std::nullopt;  // three bytes and more are past U+07FF, outside the alphabet
    }
    if (cp >= t.byte_of.size() || t.byte_of[cp] < 0) return std::nullopt;
    out += char(t.byte_of[cp]);
  }
  return out;
}

}  // namespace dualpath::text
