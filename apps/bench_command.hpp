#pragma once
// The frame every `dualpath bench NAME` shares: a subcommand under `bench` whose options fill one options
// struct, run when the command line is parsed, and printed as text or, with --json, as JSON.
#include <memory>
#include <utility>

#include "apps/command_registry.hpp"

namespace dualpath::cli {

template <class Options>
struct bench_command {
  CLI::App* cmd;
  std::shared_ptr<Options> opt;  // shared with the callback, which runs after setup returns
};

// `run(const Options&)` returns a result with to_text() and to_json(); the caller adds the options.
template <class Options, class Run>
bench_command<Options> add_bench(CLI::App& root, const std::string& name, const std::string& description, Run run) {
  auto* cmd = group(root, "bench", "Benchmarks").add_subcommand(name, description);
  auto opt = std::make_shared<Options>();
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->callback([opt, json, run] {
    const auto r = run(*opt);
    print(*json ? r.to_json() : r.to_text());
  });
  return {cmd, std::move(opt)};
}

}  // namespace dualpath::cli
