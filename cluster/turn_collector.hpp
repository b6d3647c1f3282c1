#pragma once
// The launcher's side of a run (docs/design.md §13, §15): takes every client's results until all agents
// finished, samples the scheduler for progress, metrics and the page, notices lost and rejoined nodes, or
// says why the run stopped making progress.
#include <caf/scoped_actor.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cluster/vocabulary.hpp"
#include "cluster/cluster.hpp"
#include "cluster/node_processes.hpp"
#include "cluster/role_switch.hpp"
#include "observe/ui_page.hpp"
#include "cluster/verify.hpp"
#include "protocol/runtime_codec.hpp"
#include "protocol/scheduler_codec.hpp"

namespace dualpath::cluster {

// The launcher's side of a run: takes every client's results until all agents finished, or says why the run
// stopped making progress.
struct turn_collector {
  turn_collector(const run_options& o, cluster_view& v, node_processes* n) : options(o), view(v), nodes(n) {}

  const run_options& options;
  cluster_view& view;                                  // a rejoined node's role is the cluster file's again (§7.9)
  node_processes* nodes = nullptr;                     // multi-process runs: nodes can be lost (docs/design.md §13)
  std::vector<std::pair<uint32_t, std::string>> lost;  // nodes lost now, and how, in the order noticed
  uint64_t lost_total = 0, rejoined = 0;               // losses and rejoins over the run
  uint64_t migrated = 0;                               // turns re-run because of them
  uint64_t retried = 0;                                // turns re-run after a transient fault
  // The latest progress: a turn answered, a layer or decode step run, KV read, or a change in the engines'
  // load as the scheduler sees it (or, after a loss, the moment the loss's waits end).
  int64_t last_event = 0;
  uint64_t last_fingerprint = 0, last_view_fingerprint = 0;
  std::vector<turn_record> records;
  turns_to_verify to_verify;
  run_progress progress;
  std::vector<engine_load_sample> engine_samples;  // every report's engine loads, for load_over_time
  std::string stall;
  int64_t t0 = 0;  // the run's start: just before the clients are started
  const std::vector<std::unique_ptr<runtime::node_io>>* ios = nullptr;  // embedded runs: the SNICs to sample
  role_switcher* switcher = nullptr;  // adaptive P/D (docs/design.md §7.9): moves nodes between roles

  void run(caf::scoped_actor& self);

  // Reports come at least twice per series window, so every window holds samples of every engine.
  double report_every_s() const;

  // The scheduler's stats (asked with a short deadline) feed the progress report, the metrics and the
  // report's load_over_time.
  void report(caf::scoped_actor& self);

  // Each node's SNIC, the scheduler's queue and policy, and each engine's load.
  void sample_metrics(const std::optional<scheduler_counters>& stats, const std::vector<ui_page::snic_sample>& snics);

  void start_clients();

  void on_result(const turn_result& r, const turn_payload& payload, int64_t t0);

  void check_stall(caf::scoped_actor& self);
  uint64_t work_fingerprint() const;
  // A fingerprint of some work that differs from `last` is progress: it moves last_event.
  void note_progress(uint64_t& last, uint64_t fingerprint);

  // docs/design.md §13: the scheduler drops the node and names its turns in flight; every client hears of
  // the loss (the named turns, and those that failed meanwhile, are re-run). With no prefill or no decode
  // node left the run ends, naming every lost node.
  void on_lost(caf::scoped_actor& self, uint32_t node, const std::string& how);

  // docs/design.md §13: a lost node is back, already wired to every survivor; the scheduler counts its
  // engines again from its leader's next report.
  void on_rejoined(caf::scoped_actor& self, uint32_t node);
};

}  // namespace dualpath::cluster
