#pragma once
// POST /v1/chat/completions, read (docs/design.md §18): the body as the conversation the chat template renders
// and the generation it asks for. Every field is understood, or refused by name with a 400 where ignoring it
// would change the answer; fields that change nothing here (user, metadata, ...) are accepted.
#include <nlohmann/json.hpp>
#include <exception>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "api/api_error.hpp"
#include "text/chat_template.hpp"

namespace dualpath::api {

struct generation {
  uint32_t max_tokens = 16;       // max_tokens or max_completion_tokens; the server's default otherwise
  std::vector<std::string> stop;  // the answer ends before the first of these
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with usage
  bool ignore_eos = false;     // generate max_tokens whatever comes (load tests): special tokens are not text
  float temperature = 0;       // 0: greedy
  float top_p = 1;
  std::optional<uint64_t> seed;  // none: the server draws one (the answer is then not reproducible)
};

struct chat_request {
  std::string model;
  text::chat_prompt prompt;
  generation gen;
};

struct request_limits {
  uint32_t max_tokens_default = 16;
  uint32_t max_tokens_limit = 4096;
};

namespace detail {  // shared with the other request readers of api/
void read_generation_fields(const nlohmann::ordered_json& body, const request_limits& limits, generation& gen);
void refuse_unknown(const nlohmann::ordered_json& body, const std::string& where, const std::set<std::string>& known);
api_error refusal_of(const std::exception_ptr& e);  // a refusal or JSON error thrown by these readers, as a 400
[[noreturn]] void refuse(const std::string& param, const std::string& message,
                         const std::string& code = "invalid_value");
// The body as JSON through `parse` (which throws refusals): its request, or the 400 that answers instead.
template <class Request, class Parse>
std::variant<Request, api_error> read_body(const std::string& body, Parse parse) {
  const auto j = nlohmann::ordered_json::parse(body, nullptr, false);
  if (j.is_discarded()) return api_error{400, "the body is not valid JSON", std::nullopt, "invalid_json"};
  try {
    return parse(j);
  } catch (...) {
    return refusal_of(std::current_exception());
  }
}
}  // namespace detail

// The request of `body` (the raw bytes), or the 400 that names what is wrong.
std::variant<chat_request, api_error> parse_chat_request(const std::string& body, const request_limits& limits);

}  // namespace dualpath::api
