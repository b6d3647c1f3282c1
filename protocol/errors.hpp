#pragma once
// Errors across actor boundaries (docs/design.md §16): a reply that fails carries a caf::error built from
// the project's `status` (category "dualpath", the errc as code, the message as context), and a caller
// turns any caf::error, CAF's own included (a timeout, a receiver that is gone), back into a status.
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/message.hpp>
#include <caf/sec.hpp>

#include <string>

#include "core/status.hpp"

namespace dualpath::protocol {

inline constexpr caf::atom_value error_category = caf::atom("dualpath");

inline caf::error to_error(const status& s) {
  return caf::error(static_cast<uint8_t>(s.code()), error_category, caf::make_message(s.message()));
}

inline caf::error make_failure(errc code, std::string message) { return to_error(status(code, std::move(message))); }

// The status a caf::error stands for; CAF's own errors map to timeout / unavailable / internal.
status to_status(const caf::error& e);

// Human-readable text of any caf::error ("timeout: no answer within 30 s", "unavailable: ...").
inline std::string describe(const caf::error& e) { return to_status(e).to_string(); }

}  // namespace dualpath::protocol
