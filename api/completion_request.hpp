#pragma once
// POST /v1/completions, read (docs/design.md §18): a prompt as text or as token ids (what RL rollout workers
// send, wanting ids back), and the generation it asks for. Refused by name like chat requests.
#include <string>
#include <variant>
#include <vector>

#include "api/api_error.hpp"
#include "api/chat_request.hpp"

namespace dualpath::api {

struct completion_request {
  std::string model;
  std::string text;          // the prompt as text, or
  std::vector<int32_t> ids;  // as token ids (then `text` is empty)
  bool given_as_ids = false;
  bool return_token_ids = false;  // the answer carries its generated ids (vLLM's field of the same name)
  generation gen;
};

std::variant<completion_request, api_error> parse_completion_request(const std::string& body,
                                                                     const request_limits& limits);

}  // namespace dualpath::api
