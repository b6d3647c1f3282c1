#include "observe/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <mutex>

#include "observe/http_server.hpp"

namespace dualpath::observe {

using namespace dualpath::report;

namespace pm = prometheus;

namespace {

// Seconds from a millisecond to about a minute: TTFTs of a storage-bound cluster reach tens of seconds.
pm::Histogram::BucketBoundaries latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80};
}

pm::Histogram::BucketBoundaries token_buckets() {  // per output token: sub-millisecond to a second
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1};
}

}  // namespace

struct metrics_endpoint::impl {
  std::shared_ptr<pm::Registry> registry = std::make_shared<pm::Registry>();
  std::mutex mu;  // the run's threads update, the server's thread reads (prometheus-cpp is thread-safe,
                  // the maps of label sets below are ours)

  pm::Family<pm::Histogram>& ttft = pm::BuildHistogram()
                                        .Name("dualpath_time_to_first_token_seconds")
                                        .Help("Submission of a turn to its first token")
                                        .Register(*registry);
  pm::Family<pm::Histogram>& tpot = pm::BuildHistogram()
                                        .Name("dualpath_time_per_output_token_seconds")
                                        .Help("Per generated token after the second, without the write-back wait")
                                        .Register(*registry);
  pm::Family<pm::Histogram>& queue = pm::BuildHistogram()
                                         .Name("dualpath_queue_time_seconds")
                                         .Help("Submission to assignment by the scheduler")
                                         .Register(*registry);
  pm::Family<pm::Histogram>& kv_load = pm::BuildHistogram()
                                           .Name("dualpath_kv_load_seconds")
                                           .Help("Assignment to the hit KV being in DRAM (the storage read)")
                                           .Register(*registry);
  pm::Family<pm::Counter>& turns =
      pm::BuildCounter().Name("dualpath_turns_total").Help("Turns answered, by outcome").Register(*registry);
  pm::Family<pm::Counter>& paths = pm::BuildCounter()
                                       .Name("dualpath_read_path_requests_total")
                                       .Help("Turns by the path their hit KV was read through")
                                       .Register(*registry);
  pm::Family<pm::Counter>& blocks =
      pm::BuildCounter()
          .Name("dualpath_kv_blocks_total")
          .Help("Prompt blocks of answered turns: hit (read from storage), miss (computed), corrupt")
          .Register(*registry);
  pm::Family<pm::Counter>& snic_bytes = pm::BuildCounter()
                                            .Name("dualpath_snic_read_bytes_total")
                                            .Help("Bytes read through a node's storage NIC")
                                            .Register(*registry);
  pm::Family<pm::Gauge>& snic_q = pm::BuildGauge()
                                      .Name("dualpath_snic_read_queue_bytes")
                                      .Help("Bytes queued at a node's storage NIC (read_q)")
                                      .Register(*registry);
  pm::Family<pm::Counter>& cnic_bytes = pm::BuildCounter()
                                            .Name("dualpath_cnic_bytes_total")
                                            .Help("Bytes a node's compute NIC moved, by traffic class and direction")
                                            .Register(*registry);
  pm::Family<pm::Counter>& unpersisted = pm::BuildCounter()
                                             .Name("dualpath_unpersisted_blocks_total")
                                             .Help("Write-backs of a node that persisted nothing (ENOSPC, EROFS, EIO)")
                                             .Register(*registry);
  pm::Family<pm::Counter>& reruns = pm::BuildCounter()
                                        .Name("dualpath_turns_rerun_total")
                                        .Help("Turns re-run, by cause: a lost node (migrated) or a transient fault")
                                        .Register(*registry);
  pm::Family<pm::Counter>& lost_nodes =
      pm::BuildCounter().Name("dualpath_nodes_lost_total").Help("Nodes lost while the run went on").Register(*registry);
  pm::Family<pm::Counter>& rejoined_nodes = pm::BuildCounter()
                                                .Name("dualpath_nodes_rejoined_total")
                                                .Help("Lost nodes that joined the run again")
                                                .Register(*registry);
  pm::Family<pm::Gauge>& engine_tok = pm::BuildGauge()
                                          .Name("dualpath_engine_tokens")
                                          .Help("tok_e: tokens an engine still has to process")
                                          .Register(*registry);
  pm::Family<pm::Gauge>& engine_seq =
      pm::BuildGauge().Name("dualpath_engine_requests").Help("seq_e: requests on an engine").Register(*registry);
  pm::Family<pm::Gauge>& hbm =
      pm::BuildGauge().Name("dualpath_hbm_free_bytes").Help("Free KV bytes in an engine's HBM").Register(*registry);
  pm::Family<pm::Gauge>& waiting =
      pm::BuildGauge().Name("dualpath_requests_waiting").Help("Requests in the scheduler's queue").Register(*registry);
  pm::Family<pm::Gauge>& policy = pm::BuildGauge()
                                      .Name("dualpath_scheduler_policy_info")
                                      .Help("1 for the scheduler's active policy")
                                      .Register(*registry);

  // Counters fed running totals: the last total per counter (a family's counters never move in memory).
  std::map<const pm::Counter*, uint64_t> seen_totals;

  // Adds what is new since the counter's last total; the series is present from the first one, even at 0.
  void advance(pm::Family<pm::Counter>& family, const pm::Labels& labels, uint64_t total) {
    auto& c = family.Add(labels);
    uint64_t& seen = seen_totals[&c];
    if (total > seen) c.Increment(double(total - seen));
    seen = std::max(seen, total);
  }
  std::string active_policy;
  std::unique_ptr<http_server> server;  // last: stopped first, while what it reads still exists

  // GET /metrics: the text format; anything else 404.
  http_response answer(const http_request& req) {
    http_response r;
    if (req.method == "GET" && req.path == "/metrics") {
      std::lock_guard<std::mutex> lock(mu);
      r.content_type = "text/plain; version=0.0.4";
      r.body = pm::TextSerializer().Serialize(registry->Collect());
    } else {
      r.status = 404;
      r.body = "only /metrics is served here\n";
    }
    return r;
  }
};

// The exposition is prometheus-cpp's; the transport is observe/http_server.hpp, on loopback unless told.
metrics_endpoint::metrics_endpoint(const std::string& host, uint16_t port) : impl_(std::make_unique<impl>()) {
  impl_->server = std::make_unique<http_server>(host, port, "--metrics-port", "metrics",
                                                [m = impl_.get()](const http_request& req) { return m->answer(req); });
}

metrics_endpoint::~metrics_endpoint() = default;

uint16_t metrics_endpoint::port() const { return impl_->server->port(); }

void metrics_endpoint::observe_turn(const report::turn_record& r, uint32_t block_tokens) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto& m = *impl_;
  if (!r.error.empty()) {
    m.turns.Add({{"outcome", "failed"}}).Increment();
    return;
  }
  m.turns.Add({{"outcome", "ok"}}).Increment();
  m.ttft.Add({}, latency_buckets()).Observe(r.ttft_s);
  if (r.has_tpot) m.tpot.Add({}, token_buckets()).Observe(r.tpot_s);
  m.queue.Add({}, latency_buckets()).Observe(r.queue_s);
  m.kv_load.Add({}, latency_buckets()).Observe(r.kv_read_s);
  m.paths.Add({{"path", schedule::to_string(r.path)}}).Increment();
  const uint64_t prompt_blocks = block_tokens ? (uint64_t(r.prompt_tokens) + block_tokens - 1) / block_tokens : 0;
  m.blocks.Add({{"outcome", "hit"}}).Increment(double(r.hit_blocks));
  m.blocks.Add({{"outcome", "corrupt"}}).Increment(double(r.corrupt_blocks));
  m.blocks.Add({{"outcome", "miss"}})
      .Increment(double(prompt_blocks > r.hit_blocks ? prompt_blocks - r.hit_blocks : 0));
}

void metrics_endpoint::set_cnic(uint32_t node, const char* cls, const char* direction, uint64_t bytes_total) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->advance(impl_->cnic_bytes, {{"node", std::to_string(node)}, {"class", cls}, {"direction", direction}},
                 bytes_total);
}

void metrics_endpoint::set_unpersisted(uint32_t node, uint64_t blocks_total) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->advance(impl_->unpersisted, {{"node", std::to_string(node)}}, blocks_total);
}

void metrics_endpoint::count_rerun(bool node_lost) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->reruns.Add({{"cause", node_lost ? "node_lost" : "fault"}}).Increment();
}

void metrics_endpoint::count_lost_node() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->lost_nodes.Add({}).Increment();
}

void metrics_endpoint::count_rejoined_node() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->rejoined_nodes.Add({}).Increment();
}

void metrics_endpoint::set_snic(uint32_t node, uint64_t read_bytes_total, uint64_t read_q) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto& m = *impl_;
  const pm::Labels labels{{"node", std::to_string(node)}};
  m.advance(m.snic_bytes, labels, read_bytes_total);
  m.snic_q.Add(labels).Set(double(read_q));
}

void metrics_endpoint::set_engine(uint32_t engine, const char* role, uint64_t tok, uint32_t seq, uint64_t free_hbm) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto& m = *impl_;
  const pm::Labels labels{{"engine", std::to_string(engine)}, {"role", role}};
  m.engine_tok.Add(labels).Set(double(tok));
  m.engine_seq.Add(labels).Set(double(seq));
  m.hbm.Add({{"engine", std::to_string(engine)}}).Set(double(free_hbm));
}

void metrics_endpoint::set_waiting(uint64_t requests) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->waiting.Add({}).Set(double(requests));
}

void metrics_endpoint::set_policy(const std::string& policy) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto& m = *impl_;
  if (policy == m.active_policy) return;
  if (!m.active_policy.empty()) m.policy.Add({{"policy", m.active_policy}}).Set(0);
  m.policy.Add({{"policy", policy}}).Set(1);
  m.active_policy = policy;
}

}  // namespace dualpath::observe
