#pragma once
// The live cluster page (docs/design.md §15): `dualpath run --ui-port [HOST:]PORT` serves one self-contained
// page (observe/ui/page.html, embedded at build time) and `/state`, the JSON it polls every second: the
// nodes and their engines' loads, each SNIC's read rate and read_q, the read-path split, progress and ETA,
// TTFT percentiles of the answered turns and the scheduler's policy. `POST /policy` switches the policy as
// `dualpath ctl policy set` does, guarded by the cluster's secret like the control port (§13).
// The launcher feeds it (cluster/cluster.cpp) where it feeds the metrics.
#include <caf/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster_config.hpp"
#include "observe/http_server.hpp"
#include "protocol/interfaces.hpp"
#include "protocol/scheduler_codec.hpp"
#include "report/run_progress.hpp"
#include "report/run_report.hpp"

namespace dualpath::observe {

struct ui_engine {
  uint32_t engine = 0, seq = 0;
  uint64_t tok = 0, free_hbm = 0;
};

struct ui_node {
  uint32_t node = 0;
  bool prefill = true;
  double read_bytes_per_s = 0;  // between the last two samples of its SNIC's running total
  uint64_t read_bytes = 0, read_q = 0;
  uint32_t in_flight = 0;  // turns placed with their PE or DE here
  std::vector<ui_engine> engines;
};

// What the page shows, as of the last sample.
struct ui_state {
  std::string run;                    // the run policy of the current (or last) run
  std::string policy;                 // the scheduler's active policy, from its stats
  std::vector<std::string> policies;  // what `policy set` accepts
  bool running = false, secret_required = false;
  uint64_t turns_done = 0, turns_total = 0, failed_turns = 0, waiting = 0;
  double elapsed_s = 0;
  report::distribution ttft;  // of the answered turns so far
  uint64_t ttft_count = 0;
  uint64_t path_pe = 0, path_de = 0, path_split = 0;  // answered turns by read path
  double snic_cap_bytes_per_s = 0;                    // 0: uncapped
  uint64_t refused_posts = 0;
  protocol::policy_status last_switch;  // the answer to the latest accepted POST /policy
  std::string last_switch_name;
  std::vector<ui_node> nodes;
};

// The ETA of a run `done` of `total` turns in after `elapsed_s` at the pace so far (0 before the first).
double eta_seconds(uint64_t done, uint64_t total, double elapsed_s);
// /state's body.
std::string to_json(const ui_state& s);

class ui_page {
 public:
  // Switches the scheduler's policy; answers what the scheduler said (ok false with a message on failure).
  using policy_setter = std::function<protocol::policy_status(const std::string& name)>;

  // Serves on `host:port` (port 0: any free port); `secret` "" when the cluster has none (then POST /policy
  // is not guarded). Throws user_error when it cannot bind.
  ui_page(const std::string& host, uint16_t port, std::string secret);
  ~ui_page();
  ui_page(const ui_page&) = delete;
  ui_page& operator=(const ui_page&) = delete;
  uint16_t port() const;

  // While a run lasts: the page may switch its policy through `set`. Destroying it (before the actor system
  // goes) detaches, waiting for a switch in flight (its own request is bounded).
  class attachment {
   public:
    attachment() = default;
    explicit attachment(ui_page* p) : page_(p) {}
    attachment(attachment&& o) noexcept : page_(o.page_) { o.page_ = nullptr; }
    attachment& operator=(attachment&&) = delete;
    ~attachment();

   private:
    ui_page* page_ = nullptr;
  };
  // A run starts: counters reset, its turns counted, its cluster's nodes shown (prefill first, as §3 numbers
  // them).
  [[nodiscard]] attachment begin_run(const cluster_config& c, const std::string& run_policy, uint64_t turns_total,
                                     policy_setter set);

  void observe_turn(const report::turn_record& r);
  // Once per progress interval: the totals, the scheduler's stats when it answered, and, when this process
  // holds the data planes, each node's SNIC running total and read_q (else read_q comes from the stats).
  struct snic_sample {
    uint64_t read_bytes = 0, read_q = 0;
  };
  void update(const report::run_progress& p, double elapsed_s, const std::optional<protocol::scheduler_counters>& stats,
              const std::vector<snic_sample>& snics);

  ui_state state() const;
  // The server's handler: GET / (the page), GET /state, POST /policy {"policy": NAME, "secret": S}.
  http_response handle(const http_request& req);

 private:
  http_response post_policy(const std::string& body);
  struct impl;
  std::unique_ptr<impl> impl_;
};

// A setter that asks `scheduler` (policy set) from any thread, waiting at most `timeout`.
ui_page::policy_setter scheduler_policy_setter(caf::actor_system& sys, const protocol::scheduler_actor& scheduler,
                                               std::chrono::milliseconds timeout = std::chrono::seconds(3));

}  // namespace dualpath::observe
