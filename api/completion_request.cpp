#include "api/completion_request.hpp"

namespace dualpath::api {

namespace {

using json = nlohmann::ordered_json;
using detail::refuse;

completion_request parse(const json& body, const request_limits& limits) {
  if (!body.is_object()) refuse("body", "must be a JSON object");
  detail::refuse_unknown(
      body, "",
      {"model", "prompt", "max_tokens", "temperature", "top_p", "seed", "stop", "n", "stream", "stream_options", "user",
       "frequency_penalty", "presence_penalty", "logprobs", "echo", "ignore_eos", "return_token_ids"});
  completion_request r;
  if (!body.contains("model") || !body["model"].is_string()) refuse("model", "is required");
  r.model = body["model"].get<std::string>();
  if (!body.contains("prompt")) refuse("prompt", "is required");
  const json& p = body["prompt"];
  if (p.is_string()) {
    r.text = p.get<std::string>();
  } else if (p.is_array() && !p.empty() && p[0].is_number_integer()) {
    for (const auto& id : p) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
        refuse("prompt", "token ids must be non-negative integers");
      r.ids.push_back(int32_t(id.get<int64_t>()));
    }
    r.given_as_ids = true;
  } else if (p.is_array() && p.size() == 1 && p[0].is_string()) {
    r.text = p[0].get<std::string>();
  } else if (p.is_array() && p.size() == 1 && p[0].is_array()) {
    for (const auto& id : p[0]) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
        refuse("prompt", "token ids must be non-negative integers");
      r.ids.push_back(int32_t(id.get<int64_t>()));
    }
    r.given_as_ids = true;
  } else {
    refuse("prompt", "must be a string, a list of token ids, or a list of one of either (one prompt a request)");
  }
  if (r.given_as_ids ? r.ids.empty() : r.text.empty()) refuse("prompt", "must not be empty");
  if (body.contains("echo") && body["echo"].is_boolean() && body["echo"].get<bool>())
    refuse("echo", "is not supported", "unsupported_value");
  if (body.contains("logprobs") && !body["logprobs"].is_null())
    refuse("logprobs", "is not supported", "unsupported_value");
  if (body.contains("return_token_ids") && !body["return_token_ids"].is_null()) {
    if (!body["return_token_ids"].is_boolean()) refuse("return_token_ids", "must be true or false");
    r.return_token_ids = body["return_token_ids"].get<bool>();
  }
  detail::read_generation_fields(body, limits, r.gen);
  return r;
}

}  // namespace

std::variant<completion_request, api_error> parse_completion_request(const std::string& body,
                                                                     const request_limits& limits) {
  return detail::read_body<completion_request>(body, [&](const json& j) { return parse(j, limits); });
}

}  // namespace dualpath::api
