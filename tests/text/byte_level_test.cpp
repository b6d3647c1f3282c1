// text/byte_level: the 256 bytes and their printable stand-ins.
#include <doctest/doctest.h>

#include <set>

#include "text/byte_level.hpp"
#include "text/utf8.hpp"

using namespace dualpath::text;

TEST_CASE("byte level: every byte has its own printable character, and the way back is exact") {
  std::set<std::string> seen;
  std::string all;
  for (int b = 0; b < 256; ++b) {
    const std::string one(1, char(b));
    const std::string c = to_byte_level(one);
    CHECK_FALSE(first_invalid_utf8(c).has_value());
    seen.insert(c);
    all += one;
    REQUIRE(from_byte_level(c).has_value());
    CHECK(*from_byte_level(c) == one);
  }
  CHECK(seen.size() == 256);
  CHECK(*from_byte_level(to_byte_level(all)) == all);
  CHECK(to_byte_level(" ") == "\xc4\xa0");   // 'Ġ', the space of GPT-2 vocabularies
  CHECK(to_byte_level("\n") == "\xc4\x8a");  // 'Ċ'
  CHECK(to_byte_level("A") == "A");
  CHECK_FALSE(from_byte_level("\xe4\xbd\xa0").has_value());  // a CJK character is no byte's stand-in
}
