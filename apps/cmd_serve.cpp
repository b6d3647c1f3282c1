// `dualpath serve`: the embedded cluster behind the OpenAI API (docs/design.md §18). With no arguments it
// serves the embedded default cluster's tiny model on 127.0.0.1:8000.
#include <fmt/format.h>

#include <filesystem>

#include "apps/command_registry.hpp"
#include "apps/node_flags.hpp"
#include "apps/default_cluster.hpp"
#include "cluster/control_client.hpp"
#include "core/status.hpp"
#include "core/stop_signals.hpp"
#include "core/names.hpp"
#include "serve/server.hpp"
#include "text/chat_template.hpp"

namespace {

using namespace dualpath;

struct serve_args {
  std::string cluster_file;
  std::string model_dir;
  std::string listen = "127.0.0.1:8000";
  std::string policy;
  std::string chat_template;
  uint32_t clients = 0;
  double request_timeout_s = 300;
  double drain_s = 6;
  std::string api_key;
  bool verify = false;
  cli::node_flags nodes;
  std::string report_file;
  uint32_t max_tokens = 0;
};

void setup(CLI::App& root) {
  auto a = std::make_shared<serve_args>();
  auto* cmd = root.add_subcommand("serve", "Serve the cluster's model over the OpenAI API (chat completions)");
  cmd->add_option("--cluster", a->cluster_file, "Cluster file (default: the embedded default cluster)");
  cmd->add_option("--model-dir", a->model_dir,
                  "Model directory to serve (dualpath model init), instead of the cluster file's model.name")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--listen", a->listen, "HOST:PORT to serve on (port 0: any free port, printed)")
      ->capture_default_str();
  cmd->add_option("--policy", a->policy, "Run policy (default: the cluster file's schedule.policy)");
  cmd->add_option("--chat-template", a->chat_template,
                  "Chat template family instead of the model directory's: " + join_names(text::chat_family_names()));
  cmd->add_option("--clients", a->clients,
                  "Requests served at once, one more is answered 429 (default: the cluster file's serve.max_requests)")
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--request-timeout", a->request_timeout_s, "Seconds a request may take before it is answered 503")
      ->capture_default_str();
  cmd->add_option("--drain", a->drain_s, "Seconds requests in flight may still take after SIGTERM (at most 7)")
      ->capture_default_str();
  cmd->add_option("--api-key", a->api_key,
                  "Key every request must bear (Authorization: Bearer KEY); needed beyond loopback")
      ->envname("DUALPATH_API_KEY");
  cmd->add_option("--max-tokens", a->max_tokens,
                  "The most tokens one answer generates: a request asking more is answered up to this many "
                  "(finish_reason length); default: what it asks, as far as a decode engine holds it")
      ->check(CLI::Range(1u, 131072u));
  cmd->add_flag("--verify", a->verify,
                "Recompute every answer from scratch on the cpu backend and compare (metrics and the log say how many "
                "matched)");
  cmd->add_option("--report", a->report_file,
                  "Write what the clients saw (TTFT, inter-token, end-to-end latency, cached tokens, read paths) as "
                  "a run report JSON when the server stops");
  cli::add_node_flags(cmd, a->nodes, "the server");
  cmd->callback([a] {
    if (!(a->request_timeout_s > 0)) throw user_error("serve: --request-timeout must be positive");
    // The stop-signal watcher ends a process 8 s after SIGTERM (apps/main.cpp): the drain fits within it.
    if (!(a->drain_s >= 0 && a->drain_s <= 7)) throw user_error("serve: --drain must be in 0..7 seconds");
    if (!a->chat_template.empty()) value_or_throw(text::parse_chat_family(a->chat_template));
    if (const auto dir = std::filesystem::path(a->report_file).parent_path(); !dir.empty() && !is_directory(dir))
      throw user_error("serve --report " + a->report_file + ": no directory " + dir.string() + " to write it in");
    serve::serve_options o;
    o.config = a->cluster_file.empty() ? parse_cluster_config(cli::default_cluster, "embedded default cluster")
                                       : load_cluster_config(a->cluster_file);
    if (a->cluster_file.empty()) o.config.store_dir = "dualpath-data/serve";
    // Node processes started by hand elsewhere find the store where this process does (a shared filesystem).
    o.config.store_dir = std::filesystem::absolute(o.config.store_dir).string();
    if (!a->model_dir.empty()) o.config.model = a->model_dir;
    o.policy = a->policy.empty() ? o.config.policy : a->policy;
    value_or_throw(parse_run_mode(o.policy));
    const auto [host, port] = cluster::parse_host_port(a->listen, "serve --listen", true);
    o.host = host;
    o.port = port;
    o.chat_template = a->chat_template;
    o.clients = a->clients;
    o.request_timeout_s = a->request_timeout_s;
    o.drain_s = a->drain_s;
    o.api_key = a->api_key;
    o.verify = a->verify;
    o.max_tokens_cap = a->max_tokens;
    o.report_file = a->report_file;
    o.processes = a->nodes.any();
    o.node_program = a->nodes.program();
    o.node_registry = a->nodes.registry;
    o.on_registry = [nodes = o.config.total_nodes()](const std::string& at) {
      fmt::print("{}\n", cli::registry_notice(at, nodes));
      std::fflush(stdout);
    };
    o.on_listening = [host = o.host](uint16_t bound) {
      fmt::print("serving on http://{}:{}/v1\n", host, bound);
      std::fflush(stdout);
    };
    const auto done = serve::run_server(o);
    fmt::print("stopped: {} requests answered", done.requests);
    if (a->verify)
      fmt::print("; verified: {} equal to a full recompute, {} different, {} not checked", done.verified,
                 done.mismatched, done.unchecked);
    if (!a->report_file.empty()) fmt::print("; report in {}", a->report_file);
    fmt::print("\n");
    std::fflush(stdout);
    // Drained after SIGTERM or SIGINT: a stop asked for and done is a success (docs/design.md §18).
    end_process(0);
  });
}

}  // namespace

DUALPATH_COMMAND(setup);
