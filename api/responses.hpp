#pragma once
// POST /v1/responses (docs/design.md §18), the API current agent CLIs (Codex) speak: `instructions` and
// `input` items (messages, function calls and their outputs) read into the conversation a chat template renders,
// and the answer written as a response object or as the stream of Responses events (created, output item and
// content part added, text deltas, done, completed with usage).
#include <string>
#include <variant>
#include <vector>

#include "api/api_error.hpp"
#include "api/chat_request.hpp"
#include "api/chat_response.hpp"

namespace dualpath::api {

std::variant<chat_request, api_error> parse_responses_request(const std::string& body, const request_limits& limits);

nlohmann::ordered_json response_json(const chat_answer& a);
// Every event, "event: NAME\ndata: {...}\n\n", numbered by sequence_number.
std::vector<std::string> response_events(const chat_answer& a);

}  // namespace dualpath::api
