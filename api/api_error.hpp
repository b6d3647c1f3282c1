#pragma once
// Errors of the OpenAI-compatible API (docs/design.md §18): an HTTP status and the JSON body clients parse,
// {"error": {"message", "type", "param", "code"}}.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace dualpath::api {

struct api_error {
  int http_status = 400;
  std::string message;
  std::optional<std::string> param;  // the request field at fault, when one is
  std::string code;                  // a short machine-readable reason ("unsupported_field", ...)

  // "invalid_request_error", "authentication_error", "not_found_error", "rate_limit_error", "server_error".
  std::string type() const;
  nlohmann::json body() const;
};

// A 400 about field `param`.
api_error bad_field(const std::string& param, const std::string& message, const std::string& code = "invalid_value");

}  // namespace dualpath::api
