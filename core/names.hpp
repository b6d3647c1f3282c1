#pragma once
// Names that a user types (policies, backends, models, presets, profiles) and the one message for a name
// that is not known: "unknown <what> '<name>' (known: a, b, c)".
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.hpp"

namespace dualpath {

std::string join_names(const std::vector<std::string>& names, std::string_view sep = ", ");
std::string unknown_name(std::string_view what, std::string_view name, const std::vector<std::string>& known);
// Throws user_error with unknown_name(...).
[[noreturn]] void throw_unknown_name(std::string_view what, std::string_view name,
                                     const std::vector<std::string>& known);

}  // namespace dualpath

namespace dualpath {

// The name of an enum value in a table of {value, name}; "?" for a value the table lacks (a corrupt value).
template <class E>
const char* name_of(E value, std::initializer_list<std::pair<E, const char*>> names) {
  for (const auto& [v, name] : names)
    if (v == value) return name;
  return "?";
}

// The item of `list` (anything with a `name` member) called `name`; user_error listing the known ones.
template <class T>
const T& find_named(const std::vector<T>& list, std::string_view name, std::string_view what) {
  std::vector<std::string> known;
  for (const auto& item : list) {
    if (item.name == name) return item;
    known.emplace_back(item.name);
  }
  throw_unknown_name(what, name, known);
}

// An enum whose values are 0..N-1 and whose names stand in that order in the array `Names`: the list a
// message shows, and the value of a name (bad_input naming `what` and the known names otherwise).
template <const auto& Names>
const std::vector<std::string>& name_list() {
  static const std::vector<std::string> list(std::begin(Names), std::end(Names));
  return list;
}
template <class E, const auto& Names>
result<E> parse_enum(std::string_view name, std::string_view what) {
  for (size_t i = 0; i < std::size(Names); ++i)
    if (name == Names[i]) return E(i);
  return status(errc::bad_input, unknown_name(what, name, name_list<Names>()));
}

}  // namespace dualpath
