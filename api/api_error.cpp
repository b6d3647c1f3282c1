#include "api/api_error.hpp"

namespace dualpath::api {

std::string api_error::type() const {
  switch (http_status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    default: return http_status >= 500 ? "server_error" : "invalid_request_error";
  }
}

nlohmann::json api_error::body() const {
  nlohmann::json e{{"message", message}, {"type", type()}, {"param", nullptr}, {"code", code}};
  if (param) e["param"] = *param;
  return {{"error", e}};
}

api_error bad_field(const std::string& param, const std::string& message, const std::string& code) {
  return {400, param + ": " + message, param, code};
}

}  // namespace dualpath::api
