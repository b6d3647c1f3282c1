// text/utf8: where ill-formed UTF-8 starts, and a byte stream cut into whole characters.
#include <doctest/doctest.h>

#include "text/utf8.hpp"

using namespace dualpath::text;

TEST_CASE("utf8: the first ill-formed byte is found; well-formed text has none") {
  CHECK_FALSE(first_invalid_utf8("").has_value());
  CHECK_FALSE(first_invalid_utf8("plain ascii").has_value());
  CHECK_FALSE(first_invalid_utf8("caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80").has_value());
  const std::pair<const char*, size_t> bad[] = {
      {"ab\xff", 2},            // never a UTF-8 byte
      {"a\x80", 1},             // a continuation byte alone
      {"\xc0\xaf", 0},          // overlong '/'
      {"xy\xe0\x80\x80", 2},    // overlong three-byte form
      {"\xed\xa0\x80", 0},      // a surrogate (U+D800)
      {"\xf4\x90\x80\x80", 0},  // past U+10FFFF
      {"ok \xe4\xbd", 3},       // cut off at the end
      {"\xe4\xbd"
       "a",
       0},  // cut off by another character
  };
  for (const auto& [text, at] : bad) {
    CAPTURE(text);
    REQUIRE(first_invalid_utf8(text).has_value());
    CHECK(*first_invalid_utf8(text) == at);
  }
}

TEST_CASE("utf8: a stream holds a character back until its last byte comes, and replaces what never can be") {
  utf8_stream s;
  const std::string smile = "\xf0\x9f\x98\x80";  // U+1F600, four bytes
  CHECK(s.push("a" + smile.substr(0, 1)) == "a");
  CHECK(s.pending());
  CHECK(s.push(smile.substr(1, 2)).empty());
  CHECK(s.push(smile.substr(3) + "b") == smile + "b");
  CHECK_FALSE(s.pending());
  // A stray continuation byte, and a sequence cut by a new character: one U+FFFD each, the rest kept.
  CHECK(s.push("\x80z") == "\xef\xbf\xbdz");
  CHECK(s.push("\xe4\xbd"
               "c") ==
        "\xef\xbf\xbd"
        "c");
  // The end of a stream whose last character never completed.
  CHECK(s.push("\xe4").empty());
  CHECK(s.finish() == "\xef\xbf\xbd");
  CHECK(s.finish().empty());
}
