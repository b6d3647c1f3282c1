#pragma once
// JSON as chat templates print it with `| tojson` (docs/design.md §18): keys in the order given, ", " between
// items and ": " after keys, strings escaped as JavaScript's JSON.stringify does (non-ASCII kept as it is).
// A prompt must be byte for byte what the model family's template makes, so this is not nlohmann's dump().
#include <nlohmann/json.hpp>
#include <string>

namespace dualpath::text {

std::string template_json(const nlohmann::ordered_json& value);

}  // namespace dualpath::text
