#pragma once
// Errors that are the user's to fix (bad input, missing file, unreachable peer). The CLI prints
// the message and exits with code 2; anything else is a bug.
#include <stdexcept>
#include <string>

namespace dualpath {

class user_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Exit code of the CLI for a user_error.
inline constexpr int exit_bad_input = 2;

}  // namespace dualpath
