// `dualpath node`: one node of a multi-process run, started by `dualpath run --processes` (docs/design.md §13).
// It joins the launcher's registry, hosts its node's data plane, engines and leader, and exits when the
// launcher says stop (or is gone).
#include <optional>

#include "cluster/control_client.hpp"
#include "cluster/node_processes.hpp"
#include "apps/command_registry.hpp"
#include "core/secret.hpp"
#include "core/status.hpp"

namespace {

struct node_args {
  std::string registry;
  uint32_t node = 0;
  int timeout_ms = 15000;
  std::string secret;
  std::optional<uint16_t> metrics_port;
  std::string host_lock;
};

void setup(CLI::App& root) {
  auto a = std::make_shared<node_args>();
  auto* cmd =
      root.add_subcommand("node", "Host one node of a multi-process run (started by `dualpath run --processes`)");
  cmd->add_option("--registry", a->registry, "The launcher's registry, HOST:PORT")->required();
  cmd->add_option("--node", a->node, "This node's index in the cluster")->required();
  cmd->add_option("--timeout-ms", a->timeout_ms, "Longest wait for the registry")->capture_default_str();
  cmd->add_option("--secret", a->secret,
                  "The cluster's secret (default: $DUALPATH_SECRET, which keeps it out of `ps`)");
  cmd->add_option("--metrics-port", a->metrics_port,
                  "Serve this node's Prometheus metrics on http://127.0.0.1:PORT/metrics (0: any free port, printed)");
  cmd->add_option("--host-lock", a->host_lock,
                  "Take this host-wide lock (a POSIX shared memory name, given by the launcher) around shm provider "
                  "calls");
  cmd->callback([a] {
    if (a->timeout_ms <= 0) throw dualpath::user_error("node: --timeout-ms must be positive");
    const auto [host, port] = dualpath::cluster::parse_host_port(a->registry, "node --registry");
    // docs/design.md §13: the registry admits only nodes that prove the cluster's secret.
    const std::string secret = dualpath::given_secret(a->secret);
    if (secret.empty())
      throw dualpath::user_error(std::string("node: the cluster's secret is needed: --secret or ") +
                                 dualpath::secret_env);
    dualpath::cluster::run_node_process(host, port, a->node, std::chrono::milliseconds(a->timeout_ms), secret,
                                        a->metrics_port, a->host_lock);
  });
}

}  // namespace

DUALPATH_COMMAND(setup);
