#pragma once
// A cluster run (docs/design.md §13): by default every node's actors in this one process (the embedded cluster);
// with `processes`, one process per node. Storage in a local directory, KV over libfabric either way.
// run_cluster() replays agent scripts under one policy and reports.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cluster/vocabulary.hpp"
#include "actors/agent_client.hpp"
#include "report/run_progress.hpp"
#include "report/run_report.hpp"
#include "core/cluster_config.hpp"
#include "core/modes.hpp"

namespace dualpath::observe {
class metrics_endpoint;
class ui_page;
}  // namespace dualpath::observe

namespace dualpath::cluster {

struct run_options {
  cluster_config config;
  std::string policy = "dualpath";  // a run policy name (core/modes.hpp), parsed by run_cluster
  std::vector<agent_script> scripts;
  uint32_t verify_every = 0;               // recompute every Nth turn of each agent from scratch on the cpu backend
  std::optional<uint16_t> control_port;    // publish the scheduler's control port here (0: any free port)
  std::string control_host = "127.0.0.1";  // ... on this address (docs/design.md §13: loopback unless told)
  std::function<void(const run_progress&)> on_progress;  // called about every progress_every_s
  double progress_every_s = 1.0;
  // The report's series (snic_over_time, load_over_time): window length; the scheduler is sampled twice per.
  double series_window_s = 1.0;
  std::function<void(uint16_t)> on_control_port;  // the bound control port, once published
  // One process per node (docs/design.md §13): the launcher keeps the scheduler and the clients and starts
  // `node_program node --registry ...` for every node, or, with node_registry set, publishes the registry
  // there and waits for nodes started by hand. Not for `oracle` (its copies are in-process memcpy).
  bool processes = false;
  std::string node_program;                                       // the dualpath executable
  std::string node_registry;                                      // HOST:PORT: nodes join instead of being started
  std::function<void(const std::string&)> on_registry;            // with node_registry: the bound HOST:PORT
  std::function<void(const std::vector<int>&)> on_nodes_started;  // pids of the node processes
  // A node was lost and the run goes on without it (docs/design.md §13): its index and how it was lost.
  std::function<void(uint32_t node, const std::string& how)> on_node_lost;
  // A lost node joined again (`dualpath node --node N` started anew) and takes work (docs/design.md §13).
  std::function<void(uint32_t node)> on_node_rejoined;
  // Prometheus metrics (observe/metrics.hpp), updated as turns end and once a second; not owned.
  observe::metrics_endpoint* metrics = nullptr;
  // The live cluster page (observe/ui_page.hpp), fed where the metrics are and switching the policy; not owned.
  observe::ui_page* ui = nullptr;
};

// The cluster's secret for node processes and the control port (docs/design.md §13): "" when neither is
// used; the cluster file's or DUALPATH_SECRET's; else, for nodes this launcher spawns, one generated now.
// user_error when nodes started by hand or a control port need a given one and none is.
std::string launch_secret(const cluster_config& c, bool processes, const std::string& node_registry, bool control_port);

// user_error unless the cluster can run one process per node under `mode`, with nodes spawned from
// `node_program` or joining at `node_registry`.
void check_processes(const cluster_config& c, const run_mode& mode, const std::string& node_program,
                     const std::string& node_registry);

// Runs the cluster until every script finished; throws user_error on bad configuration, or when the run
// makes no progress for config.timeout_s.
run_summary run_cluster(const run_options& options);

}  // namespace dualpath::cluster
