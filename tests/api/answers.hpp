#pragma once
// Answers and refusals for the API's tests.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "api/chat_response.hpp"

namespace dualpath::test {

// An answer `content` to a prompt of `prompt` tokens, `completion` generated, named `id` for model "m".
inline api::chat_answer answer(const std::string& id, const std::string& content, uint32_t prompt,
                               uint32_t completion) {
  api::chat_answer a;
  a.id = id;
  a.model = "m";
  a.content = content;
  a.prompt_tokens = prompt;
  a.completion_tokens = completion;
  return a;
}

// Each body is refused by `parse` with a 400 that names its field (the second of the pair).
template <class Parse>
void check_refused_fields(const std::vector<std::pair<std::string, std::string>>& cases, Parse parse) {
  for (const auto& [body, param] : cases) {
    CAPTURE(body);
    const auto r = parse(body);
    REQUIRE(std::holds_alternative<api::api_error>(r));
    CHECK(std::get<api::api_error>(r).param == param);
  }
}

}  // namespace dualpath::test
