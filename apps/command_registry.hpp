#pragma once
// Subcommands register themselves from their own file: DUALPATH_COMMAND(fn) runs fn(root) at start-up.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace dualpath::cli {

using command_setup = std::function<void(CLI::App& root)>;

int register_command(command_setup setup);
void setup_all(CLI::App& root);

// The subcommand `name` of `parent`, created on first use (for groups like `bench` or `trace`).
CLI::App& group(CLI::App& parent, const std::string& name, const std::string& description);

// Before parsing: every unsigned option refuses a negative value, and an unknown subcommand is named
// (throws user_error).
void check_values_and_names(CLI::App& root, int argc, char** argv);

// DUALPATH_PARSE_ONLY=1: parse the command line and stop before any command runs (the docs check).
void parse_only(CLI::App& root);

// Writes `text` to stdout (keeps commands testable and output consistent).
void print(const std::string& text);

}  // namespace dualpath::cli

#define DUALPATH_CONCAT_INNER(a, b) a##b
#define DUALPATH_CONCAT(a, b) DUALPATH_CONCAT_INNER(a, b)
#define DUALPATH_COMMAND(fn) \
  static const int DUALPATH_CONCAT(dualpath_command_, __LINE__) = ::dualpath::cli::register_command(fn)
