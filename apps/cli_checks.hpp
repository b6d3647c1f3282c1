#pragma once
// Value checks every command shares, with messages that name the value and what is accepted (CLI11's own
// print the range's bounds as 300-digit floats, and its enum maps accept the enum's integers too).
#include <CLI/CLI.hpp>

#include <map>
#include <string>

namespace dualpath::cli {

// A number > 0.
inline CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v)) return "'" + text + "' is not a number";
        return v > 0 ? std::string() : "must be positive (got " + text + ")";
      },
      "POSITIVE");
}

// A number >= 0 (unsigned options get it everywhere: CLI11 would wrap "-5" to 2^64 - 5).
inline CLI::Validator non_negative() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v)) return "'" + text + "' is not a number";
        return v >= 0 ? std::string() : "must not be negative (got " + text + ")";
      },
      "");
}

// One of the names of `choices`, turned into its value's integer for CLI11 to store into the enum.
template <class Enum>
CLI::Validator one_of(const std::map<std::string, Enum>& choices) {
  std::string names;
  for (const auto& [name, value] : choices) names += (names.empty() ? "" : ", ") + name;
  return CLI::Validator(
      [choices, names](std::string& text) -> std::string {
        const auto it = choices.find(text);
        if (it == choices.end()) return "'" + text + "' is not one of " + names;
        text = std::to_string(static_cast<int>(it->second));
        return {};
      },
      "{" + names + "}");
}

}  // namespace dualpath::cli
