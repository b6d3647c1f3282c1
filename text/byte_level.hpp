#pragma once
// The byte-level alphabet of GPT-2-style BPE vocabularies (docs/design.md §18): each of the 256 byte values
// stands for one printable code point, so every byte string is a string of vocabulary characters.
#include <optional>
#include <string>
#include <string_view>

namespace dualpath::text {

// `bytes` in the byte-level alphabet (UTF-8 of the code points that stand for them).
std::string to_byte_level(std::string_view bytes);
// The bytes a byte-level string stands for; nothing when it holds a character outside the alphabet.
std::optional<std::string> from_byte_level(std::string_view chars);

}  // namespace dualpath::text
