#include "text/jinja_json.hpp"

#include <fmt/format.h>

#include <cmath>

namespace dualpath::text {

namespace {

void quote(std::string& out, const std::string& s) {
  out += '"';
  for (const char ch : s) {
    const auto c = uint8_t(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += ch;
    }
  }
  out += '"';
}

// A double as JavaScript prints it, for the values JSON carries: integers without a point, the rest in the
// shortest form that reads back ({fmt}'s shortest round trip, which JavaScript's Number#toString also is).
std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  if (v == std::floor(v) && std::fabs(v) < 1e21) return fmt::format("{:.0f}", v);
  std::string s = fmt::format("{}", v);
  // {fmt} writes exponents as e-07 / e+21; JavaScript as e-7 / e+21.
  const size_t e = s.find('e');
  if (e != std::string::npos && e + 2 < s.size() && s[e + 2] == '0') s.erase(e + 2, 1);
  return s;
}

void write(std::string& out, const nlohmann::ordered_json& v) {
  switch (v.type()) {
    case nlohmann::ordered_json::value_t::null: out += "null"; break;
    case nlohmann::ordered_json::value_t::boolean: out += v.get<bool>() ? "true" : "false"; break;
    case nlohmann::ordered_json::value_t::number_integer: out += std::to_string(v.get<int64_t>()); break;
    case nlohmann::ordered_json::value_t::number_unsigned: out += std::to_string(v.get<uint64_t>()); break;
    case nlohmann::ordered_json::value_t::number_float: out += number(v.get<double>()); break;
    case nlohmann::ordered_json::value_t::string: quote(out, v.get_ref<const std::string&>()); break;
    case nlohmann::ordered_json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& item : v) {
        if (!first) out += ", ";
        first = false;
        write(out, item);
      }
      out += ']';
      break;
    }
    case nlohmann::ordered_json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : v.items()) {
        if (!first) out += ", ";
        first = false;
        quote(out, key);
        out += ": ";
        write(out, item);
      }
      out += '}';
      break;
    }
    default: out += "null";  // binary and discarded values do not come out of a request body
  }
}

}  // namespace

std::string template_json(const nlohmann::ordered_json& value) {
  std::string out;
  write(out, value);
  return out;
}

}  // namespace dualpath::text
