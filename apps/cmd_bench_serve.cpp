// `dualpath bench serve`: a workload replayed against a running `dualpath serve` over HTTP (apps/serve_load.hpp),
// reported as `run` reports (the same table and JSON, so `dualpath plot` draws it).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "apps/command_registry.hpp"
#include "apps/serve_load.hpp"
#include "apps/workload.hpp"
#include "cluster/control_client.hpp"
#include "core/status.hpp"

namespace {

using namespace dualpath;

struct bench_serve_args {
  std::string url = "127.0.0.1:8000";
  std::string label = "served";
  cli::load_target target;
  cli::workload_options workload;
  cli::serving_options serving;
};

void run(bench_serve_args& a) {
  std::string at = a.url;
  if (at.rfind("http://", 0) == 0) at = at.substr(7);
  while (!at.empty() && at.back() == '/') at.pop_back();
  if (at.size() > 3 && at.compare(at.size() - 3, 3, "/v1") == 0) at.resize(at.size() - 3);
  const auto [host, port] = cluster::parse_host_port(at, "bench serve --url", false);
  a.target.host = host;
  a.target.port = port;
  a.target.slo = a.serving.slo;
  if (!(a.target.request_timeout_s > 0)) throw user_error("bench serve: --request-timeout must be positive");
  if (!(a.target.cancel_share >= 0 && a.target.cancel_share < 1))
    throw user_error("bench serve: --cancel-share must be at least 0 and below 1");
  cli::check_workload_options(a.workload, !a.serving.aps_sweep.empty());
  const auto model = cli::ask_model(a.target);
  // The embedded default's small demo trace unless a trace or preset is given, as `run` does.
  const bool demo = a.workload.trace_file.empty() && a.workload.preset.empty();
  const bool tty = isatty(fileno(stderr));
  uint64_t runs = 0;  // the server keeps its store across the runs: each later one draws new prompts
  cli::serve(a.serving, a.workload, {a.label},
             [&](const std::string&, const cli::workload_options& w, const std::string& label) {
               const auto agents = cli::build_workload(w, demo);
               a.target.token_seed = runs++;
               const auto r = cli::run_load(
                   a.target, model, agents, w, label, [&](uint64_t done, uint64_t total, uint64_t failed) {
                     if (a.serving.quiet) return;
                     const auto line =
                         fmt::format("bench serve {}: {}/{} turns, {} failed", label, done, total, failed);
                     if (tty) fmt::print(stderr, "\r{}", line);
                     else fmt::print(stderr, "{}\n", line);
                     if (tty && done == total) fmt::print(stderr, "\n");
                   });
               return cli::policy_run{r.summary, r.extra()};
             });
}

void setup(CLI::App& root) {
  auto a = std::make_shared<bench_serve_args>();
  auto* cmd = cli::group(root, "bench", "Benchmarks")
                  .add_subcommand("serve",
                                  "Load a running `dualpath serve` over HTTP with a workload (TTFT, TPOT, "
                                  "inter-token and end-to-end latency, goodput, errors by status)");
  cmd->add_option("--url", a->url, "The server: [http://]HOST:PORT[/v1]")->capture_default_str();
  cmd->add_option("--api-key", a->target.api_key, "The server's API key (Bearer)")->envname("DUALPATH_API_KEY");
  cmd->add_option("--concurrency", a->target.concurrency,
                  "Conversations at once (default 0: every agent at its arrival, at most 1,024 at once)");
  cmd->add_option("--request-timeout", a->target.request_timeout_s, "Seconds a turn may take, retries included")
      ->capture_default_str();
  cmd->add_option("--cancel-share", a->target.cancel_share,
                  "Share of turns first hung up on after their first token, then sent again whole")
      ->capture_default_str();
  cmd->add_option("--label", a->label, "The run's name in the table and the report")->capture_default_str();
  cli::add_workload_options(cmd, a->workload);
  cli::add_report_options(cmd, a->serving);
  cmd->callback([a] { run(*a); });
}

}  // namespace

DUALPATH_COMMAND(setup);
