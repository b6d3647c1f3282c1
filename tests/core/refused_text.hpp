#pragma once
// Bad text and a piece of the message that must name what is wrong in it: how the parsers' tests check that
// bad input is refused by name.
#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "core/status.hpp"

namespace dualpath::test {

using refused_cases = std::vector<std::pair<const char*, const char*>>;

// `parse(text)` throws user_error with the message for each case.
template <class Parse>
void check_refused_text(const refused_cases& cases, Parse parse) {
  for (const auto& [text, message] : cases) {
    CAPTURE(text);
    CHECK_THROWS_WITH_AS(parse(text), doctest::Contains(message), user_error);
  }
}

}  // namespace dualpath::test
