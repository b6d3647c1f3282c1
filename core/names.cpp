#include "core/names.hpp"

#include "core/status.hpp"

namespace dualpath {

std::string join_names(const std::vector<std::string>& names, std::string_view sep) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += sep;
    out += n;
  }
  return out;
}

std::string unknown_name(std::string_view what, std::string_view name, const std::vector<std::string>& known) {
  return "unknown " + std::string(what) + " '" + std::string(name) + "' (known: " + join_names(known) + ")";
}

void throw_unknown_name(std::string_view what, std::string_view name, const std::vector<std::string>& known) {
  throw user_error(unknown_name(what, name, known));
}

}  // namespace dualpath
