// `dualpath`: the command-line entry point. Bad input ends with one message on stderr and exit code 2.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "core/faults.hpp"
#include "apps/cli_checks.hpp"
#include "apps/command_registry.hpp"
#include "core/status.hpp"
#include "transport/endpoint.hpp"
#include "core/stop_signals.hpp"

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

namespace {

// Every unsigned option refuses a negative value: CLI11 would wrap "-5" to 2^64 - 5.
void refuse_negative_unsigned(CLI::App& app) {
  for (auto* opt : app.get_options({}))
    if (opt->get_type_name().rfind("UINT", 0) == 0) opt->check(non_negative());
  for (auto* sub : app.get_subcommands({})) refuse_negative_unsigned(*sub);
}

// CLI11 answers an unknown subcommand with "A subcommand is required"; name it and the known ones instead.
void name_unknown_subcommand(const CLI::App& root, int argc, char** argv) {
  const CLI::App* at = &root;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    const auto subs = at->get_subcommands({});
    if (subs.empty() || word.empty() || word[0] == '-') return;
    const CLI::App* next = nullptr;
    std::string known;
    for (const auto* s : subs) {
      if (s->check_name(word)) next = s;
      known += (known.empty() ? "" : ", ") + s->get_name();
    }
    if (!next)
      throw user_error(fmt::format("{}unknown command '{}' (known: {})", path.empty() ? "" : path + ": ", word, known));
    at = next;
    path += (path.empty() ? "" : " ") + word;
  }
}

}  // namespace

void check_values_and_names(CLI::App& root, int argc, char** argv) {
  refuse_negative_unsigned(root);
  name_unknown_subcommand(root, argc, argv);
}

void parse_only(CLI::App& root) {
  // Every option has been parsed and checked once the root's parse-complete callback runs, and no command's own
  // callback has yet. Stopping there leaves those callbacks, which own the options' storage, in place: replacing
  // them freed that storage while the parser still wrote into it.
  root.parse_complete_callback([] { throw CLI::Success(); });
}

void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace dualpath::cli

int main(int argc, char** argv) {
  // Before any thread exists, so every thread inherits the blocked SIGTERM / SIGINT (core/stop_signals.hpp).
  dualpath::own_stop_signals(std::chrono::seconds(8));
  dualpath::transport::load_only_named_provider();
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
    dualpath::cli::check_values_and_names(app, argc, argv);
    if (const char* p = std::getenv("DUALPATH_PARSE_ONLY"); p && std::string(p) == "1") dualpath::cli::parse_only(app);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : dualpath::exit_bad_input;
  } catch (const dualpath::user_error& e) {
    std::fprintf(stderr, "dualpath: %s\n", e.what());
    if (const int sig = dualpath::stop_requested()) dualpath::end_process(dualpath::exit_code_for(sig));
    return dualpath::exit_bad_input;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dualpath: internal error: %s\n", e.what());
    return 1;
  }
  // Stopped by a signal: the actors are down, and the libraries' exit-time destructors are not needed.
  if (const int sig = dualpath::stop_requested()) dualpath::end_process(dualpath::exit_code_for(sig));
  return 0;
}
