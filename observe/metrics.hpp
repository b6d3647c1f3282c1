#pragma once
// Prometheus metrics of a running cluster (docs/design.md §15): `dualpath run --metrics-port P` serves
// /metrics on 127.0.0.1:P with the turn latencies as histograms and the SNICs, engines, read paths and the
// scheduler's queue as counters and gauges, named in the ecosystem's style (dualpath_..._seconds,
// ..._bytes_total). prometheus-cpp stays behind this interface.
#include <cstdint>
#include <memory>
#include <string>

#include "report/run_report.hpp"

namespace dualpath::observe {

class metrics_endpoint {
 public:
  // Binds `host:port` (port 0: any free port); throws user_error when it cannot.
  metrics_endpoint(const std::string& host, uint16_t port);
  ~metrics_endpoint();
  metrics_endpoint(const metrics_endpoint&) = delete;
  metrics_endpoint& operator=(const metrics_endpoint&) = delete;

  uint16_t port() const;  // the port actually bound

  // One answered (or failed) turn: latency histograms, read path, KV blocks by outcome.
  void observe_turn(const report::turn_record& r, uint32_t block_tokens);
  // A node's SNIC: bytes read so far (a running total) and the bytes queued now.
  void set_snic(uint32_t node, uint64_t read_bytes_total, uint64_t read_q);
  // Bytes a node's CNIC moved so far (a running total) for `cls` ("kv") in `direction` ("out": copies
  // this node posted).
  void set_cnic(uint32_t node, const char* cls, const char* direction, uint64_t bytes_total);
  // Write-backs of a node that persisted nothing so far (a running total).
  void set_unpersisted(uint32_t node, uint64_t blocks_total);
  // An engine's load as the scheduler sees it (role "prefill" or "decode").
  void set_engine(uint32_t engine, const char* role, uint64_t tok, uint32_t seq, uint64_t free_hbm);
  void set_waiting(uint64_t requests);
  void set_policy(const std::string& policy);
  // Reliability (docs/design.md §13): a turn re-run because a node was lost or after a transient fault;
  // a node lost while the run went on.
  void count_rerun(bool node_lost);
  void count_lost_node();
  void count_rejoined_node();  // a lost node that joined again

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace dualpath::observe
