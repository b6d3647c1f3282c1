// `dualpath run`: start the embedded cluster, replay agents, report. With no arguments it runs the
// embedded default: a storage-bound 1P2D cluster of the tiny model, basic vs dualpath vs oracle.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "apps/default_cluster.hpp"
#include "cluster/cluster.hpp"
#include "observe/metrics.hpp"
#include "observe/ui_page.hpp"
#include "cluster/control_client.hpp"
#include "apps/command_registry.hpp"
#include "apps/node_flags.hpp"
#include "apps/workload.hpp"
#include "core/model_catalog.hpp"
#include "core/secret.hpp"
#include "core/status.hpp"
#include "core/trace.hpp"

namespace {

namespace fs = std::filesystem;
using namespace dualpath;

struct run_args {
  double series_window_s = 1.0;
  cli::workload_options workload;
  cli::serving_options serving;
  std::string cluster_file;
  uint32_t verify_every = 0;
  bool keep_store = false, verify_every_set = false;
  cli::node_flags nodes;
  std::optional<uint16_t> control_port;
  std::string control_host = "127.0.0.1";  // docs/design.md §13: loopback unless told otherwise
  std::optional<uint16_t> metrics_port;
  std::shared_ptr<observe::metrics_endpoint> metrics;  // one for every run of the command
  std::optional<uint16_t> ui_port;
  std::string ui_host = "127.0.0.1";     // like the control port: loopback unless told (docs/design.md §13)
  std::shared_ptr<observe::ui_page> ui;  // one page for every run of the command
};

// Agent scripts for the cluster's clients: Mooncake agents get their one prompt from the hash ids.
std::vector<actors::agent_script> build_scripts(const cli::workload_options& w, bool demo, uint32_t vocab) {
  std::vector<actors::agent_script> scripts;
  for (auto& a : cli::build_workload(w, demo)) {
    actors::agent_script s;
    s.agent = a.index;
    s.start_s = a.start_s;
    s.seed = w.seed;
    s.replay_tool_time = w.tool_time;
    if (a.mooncake) {
      s.fixed_prompt = actors::mooncake_tokens(*a.mooncake, vocab);
      a.turns[0].prompt = s.fixed_prompt->size();
    }
    s.turns = std::move(a.turns);
    scripts.push_back(std::move(s));
  }
  return scripts;
}

// One cluster run of `policy` over `scripts`, with the options of the command line.
report::run_summary run_policy(const run_args& a, const cluster_config& config, const std::string& policy,
                               std::vector<actors::agent_script> scripts, uint32_t verify_every,
                               const std::string& label) {
  const bool tty = isatty(fileno(stderr));
  cluster::run_options o;
  o.config = config;
  o.config.store_dir = (fs::path(config.store_dir) / ("run-" + policy)).string();
  // Each run starts from a cold store of its own, so the comparison is fair and repeatable.
  if (!a.keep_store) {
    std::error_code ec;
    fs::remove_all(o.config.store_dir, ec);
  }
  o.policy = policy;
  o.scripts = std::move(scripts);
  o.verify_every = verify_every;
  for (auto& s : o.scripts) s.verify_every = verify_every;
  o.control_port = a.control_port;
  o.metrics = a.metrics.get();
  o.ui = a.ui.get();
  o.series_window_s = a.series_window_s;
  o.control_host = a.control_host;
  o.processes = a.nodes.any();
  o.node_program = a.nodes.program();
  o.node_registry = a.nodes.registry;
  o.on_registry = [label, nodes = config.total_nodes()](const std::string& at) {
    fmt::print(stderr, "{}: {}\n", label, cli::registry_notice(at, nodes));
  };
  if (o.control_port)
    o.on_control_port = [host = a.control_host](uint16_t port) {
      fmt::print(stderr, "scheduler control port: {}:{}\n", host, port);
    };
  if (!a.serving.quiet) {
    o.on_progress = [label, tty](const cluster::run_progress& p) {
      const double frac = p.turns_total ? double(p.turns_done) / double(p.turns_total) : 0;
      const double eta = frac > 0 ? p.elapsed_s * (1 - frac) / frac : 0;
      if (tty) {
        const int width = 30, filled = int(frac * width);
        fmt::print(stderr, "\r{:<10} [{}{}] turns {}/{} agents {}/{} {:.0f}s eta {:.0f}s   ", label,
                   std::string(filled, '#'), std::string(width - filled, '.'), p.turns_done, p.turns_total,
                   p.agents_done, p.agents_total, p.elapsed_s, eta);
        if (p.agents_done == p.agents_total) fmt::print(stderr, "\n");
      } else if (p.agents_done == p.agents_total || std::fmod(p.elapsed_s, 5.0) < 1.0) {
        fmt::print(stderr, "{}: turns {}/{} agents {}/{} elapsed {:.0f}s eta {:.0f}s\n", label, p.turns_done,
                   p.turns_total, p.agents_done, p.agents_total, p.elapsed_s, eta);
      }
    };
  }
  return cluster::run_cluster(o);
}

void run_command(run_args& a) {
  const bool embedded_default = a.cluster_file.empty();
  if (a.metrics_port) {
    // docs/design.md §15: one endpoint for the command, on loopback; every run of a comparison adds to it.
    a.metrics = std::make_shared<observe::metrics_endpoint>("127.0.0.1", *a.metrics_port);
    fmt::print(stderr, "metrics: http://127.0.0.1:{}/metrics\n", a.metrics->port());
  }
  cluster_config config = embedded_default ? parse_cluster_config(cli::default_cluster, "embedded default cluster")
                                           : load_cluster_config(a.cluster_file);
  cli::check_workload_options(a.workload, !a.serving.aps_sweep.empty());
  if (a.ui_port) {
    // docs/design.md §15: the page switches policies, so off loopback it needs the cluster's secret (§13).
    const std::string secret = given_secret(config.secret);
    if (secret.empty() && a.ui_host != "127.0.0.1")
      throw user_error("--ui-port " + a.ui_host +
                       ":...: a page off loopback needs the cluster's secret: set "
                       "[runtime] secret in the cluster file or " +
                       secret_env);
    a.ui = std::make_shared<observe::ui_page>(a.ui_host, *a.ui_port, secret);
    fmt::print(stderr, "cluster page: http://{}:{}/\n", a.ui_host, a.ui->port());
  }
  const auto policies =
      cli::chosen_policies(a.serving, embedded_default ? std::vector<std::string>{"basic", "dualpath", "oracle"}
                                                       : std::vector<std::string>{config.policy});
  // Mooncake prompts are drawn from the vocabulary of a catalog model whose math runs; others take 32000 ids.
  uint32_t vocab = 32000;
  for (const auto& m : model_catalog())
    if (m.name == config.model && m.runnable) vocab = m.vocab;
  const bool demo_trace = embedded_default && a.workload.trace_file.empty() && a.workload.preset.empty();
  // The embedded default shows that the tokens are right: every turn is recomputed from scratch afterwards.
  const uint32_t verify_every = a.verify_every_set ? a.verify_every : (embedded_default ? 1 : 0);
  cli::serve(
      a.serving, a.workload, policies,
      [&](const std::string& policy, const cli::workload_options& w, const std::string& label) {
        return cli::policy_run{run_policy(a, config, policy, build_scripts(w, demo_trace, vocab), verify_every, label)};
      });
}

// A listening address flag: PORT (on 127.0.0.1) or HOST:PORT to listen elsewhere.
std::pair<std::string, uint16_t> listen_at(const std::string& text, const char* flag) {
  return cluster::parse_host_port(text.find(':') == std::string::npos ? "127.0.0.1:" + text : text, flag, true);
}

void setup(CLI::App& root) {
  auto a = std::make_shared<run_args>();
  auto* cmd = root.add_subcommand("run", "Run the embedded cluster on an agent trace and report JCT, TTFT, TPOT");
  cmd->add_option("--cluster", a->cluster_file, "Cluster file (TOML); default: the embedded 1P2D tiny cluster");
  cli::add_workload_options(cmd, a->workload);
  cli::add_serving_options(cmd, a->serving);
  cmd->add_option_function<uint32_t>(
      "--verify-every", [a](uint32_t n) { a->verify_every = n, a->verify_every_set = true; },
      "Recompute every Nth turn from scratch on the cpu backend and compare tokens (default: 1 for the embedded "
      "default, else 0 = off)");
  cmd->add_option_function<std::string>(
      "--control-port",
      [a](const std::string& text) { std::tie(a->control_host, a->control_port) = listen_at(text, "--control-port"); },
      "Publish the scheduler's control port for `dualpath ctl` on [HOST:]PORT (HOST default 127.0.0.1; port 0: any "
      "free port, printed); needs the cluster's secret ([runtime] secret or $DUALPATH_SECRET)");
  cmd->add_option_function<uint16_t>(
      "--metrics-port", [a](uint16_t port) { a->metrics_port = port; },
      "Serve Prometheus metrics on http://127.0.0.1:PORT/metrics while it runs (0: any free port, printed)");
  cmd->add_option_function<std::string>(
      "--ui-port", [a](const std::string& text) { std::tie(a->ui_host, a->ui_port) = listen_at(text, "--ui-port"); },
      "Serve a live page of the cluster (nodes, SNICs, loads, progress, TTFT, a policy switch) on "
      "http://[HOST:]PORT/ (HOST default 127.0.0.1; port 0: any free port, printed)");
  cli::add_node_flags(cmd, a->nodes, "this launcher");
  cmd->add_flag("--keep-store", a->keep_store, "Do not clear the policy's store directory first");
  cmd->add_option("--series-window", a->series_window_s,
                  "Seconds per window of the report's snic_over_time and load_over_time")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 3600.0));
  cmd->callback([a] { run_command(*a); });
}

}  // namespace

DUALPATH_COMMAND(setup);
