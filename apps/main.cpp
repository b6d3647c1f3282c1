// `dualpath`: the command-line entry point. Bad input ends with one message on stderr and exit code 2.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "core/faults.hpp"
#include "apps/command_registry.hpp"
#include "core/status.hpp"

namespace dualpath::cli {

namespace {
std::vector<command_setup>& registry() {
  static std::vector<command_setup> r;
  return r;
}
}  // namespace

int register_command(command_setup setup) {
  registry().push_back(std::move(setup));
  return 0;
}

void setup_all(CLI::App& root) {
  for (auto& setup : registry()) setup(root);
}

CLI::App& group(CLI::App& parent, const std::string& name, const std::string& description) {
  for (auto* existing : parent.get_subcommands({})) {
    if (existing->check_name(name)) return *existing;
  }
  auto* sub = parent.add_subcommand(name, description);
  sub->require_subcommand(1);
  return *sub;
}

void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace dualpath::cli

int main(int argc, char** argv) {
  CLI::App app{"DualPath: dual-path KV-cache loading for multi-turn agent inference"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Print help for every subcommand");
  // DUALPATH_LOG=debug|info|warn|error|off overrides the default (warnings and errors only).
  // Logs go to stderr: stdout carries results (tables, JSON) that other tools read.
  spdlog::set_default_logger(spdlog::stderr_color_mt("dualpath"));
  spdlog::default_logger()->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
  const char* level = std::getenv("DUALPATH_LOG");
  spdlog::set_level(level ? spdlog::level::from_str(level) : spdlog::level::warn);
  try {
    // Fault seams armed by a test for the processes it starts (docs/design.md §16); off unless set.
    dualpath::throw_if_error(dualpath::faults::arm_from_env());
    dualpath::cli::setup_all(app);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : dualpath::exit_bad_input;
  } catch (const dualpath::user_error& e) {
    std::fprintf(stderr, "dualpath: %s\n", e.what());
    return dualpath::exit_bad_input;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dualpath: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
