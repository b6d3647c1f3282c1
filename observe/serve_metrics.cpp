#include "observe/serve_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace dualpath::observe {

namespace pm = prometheus;

namespace {

pm::Histogram::BucketBoundaries latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80};
}
pm::Histogram::BucketBoundaries token_buckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1};
}

template <class Builder>
auto& family(Builder b, const char* name, const char* help, pm::Registry& r) {
  return b.Name(name).Help(help).Register(r);
}

}  // namespace

struct serve_metrics::impl {
  std::shared_ptr<pm::Registry> registry = std::make_shared<pm::Registry>();
  pm::Family<pm::Histogram>& e2e = family(pm::BuildHistogram(), "dualpath_serve_request_seconds",
                                          "A request's arrival to its answer's end, as its client saw it", *registry);
  pm::Family<pm::Histogram>& ttft = family(pm::BuildHistogram(), "dualpath_serve_time_to_first_token_seconds",
                                           "A request's arrival to its first generated token", *registry);
  pm::Family<pm::Histogram>& itl = family(pm::BuildHistogram(), "dualpath_serve_inter_token_seconds",
                                          "Between generated tokens as they reached the front end", *registry);
  pm::Family<pm::Counter>& tokens = family(
      pm::BuildCounter(), "dualpath_serve_tokens_total",
      "Tokens of answered requests: prompt, cached (prompt tokens whose KV was loaded) and generated", *registry);
  pm::Family<pm::Counter>& responses =
      family(pm::BuildCounter(), "dualpath_serve_responses_total", "HTTP responses by route and status", *registry);
  pm::Family<pm::Counter>& paths = family(pm::BuildCounter(), "dualpath_serve_read_path_requests_total",
                                          "Answered requests by the path their hit KV was read through", *registry);
  pm::Family<pm::Counter>& cancelled = family(pm::BuildCounter(), "dualpath_serve_cancelled_requests_total",
                                              "Requests cancelled before their turn ended, by reason", *registry);
  pm::Family<pm::Gauge>& running =
      family(pm::BuildGauge(), "dualpath_serve_requests",
             "Requests in the cluster now (running) and the most at once (capacity)", *registry);
  pm::Family<pm::Gauge>& slots =
      family(pm::BuildGauge(), "dualpath_serve_buffer_slots", "A node's DRAM buffer slots: free and total", *registry);
  pm::Family<pm::Gauge>& hbm =
      family(pm::BuildGauge(), "dualpath_serve_hbm_free_bytes", "Free KV bytes in an engine's HBM", *registry);
  pm::Family<pm::Gauge>& node_requests =
      family(pm::BuildGauge(), "dualpath_serve_node_requests",
             "Turns in flight on a node (prefill or decode), as the scheduler saw them when scraped", *registry);
  pm::Family<pm::Gauge>& read_q = family(pm::BuildGauge(), "dualpath_serve_snic_read_queue_bytes",
                                         "Bytes waiting on a node's storage NIC, as the scheduler saw them", *registry);
  pm::Family<pm::Counter>& resumed = family(pm::BuildCounter(), "dualpath_serve_resumed_streams_total",
                                            "Answers whose turn was run again after a node was lost", *registry);
  pm::Family<pm::Counter>& rechecked =
      family(pm::BuildCounter(), "dualpath_serve_rechecked_tokens_total",
             "Tokens a re-run turn made again that its client already had, by whether they were the same", *registry);
  pm::Family<pm::Counter>& nodes = family(pm::BuildCounter(), "dualpath_serve_nodes_total",
                                          "Node processes lost, and lost ones that joined again", *registry);
  pm::Family<pm::Gauge>& verified = family(pm::BuildGauge(), "dualpath_serve_verified_answers",
                                           "serve --verify: answers recomputed from scratch, by result", *registry);
};

serve_metrics::serve_metrics() : impl_(std::make_unique<impl>()) {}
serve_metrics::~serve_metrics() = default;

void serve_metrics::request_done(const served_request& r) {
  auto& m = *impl_;
  const pm::Labels ep{{"endpoint", r.endpoint}};
  m.e2e.Add(ep, latency_buckets()).Observe(r.e2e_s);
  m.ttft.Add(ep, latency_buckets()).Observe(r.ttft_s);
  auto& itl = m.itl.Add(ep, token_buckets());
  for (const double s : r.inter_token_s) itl.Observe(s);
  m.tokens.Add({{"kind", "prompt"}}).Increment(r.prompt_tokens);
  m.tokens.Add({{"kind", "cached"}}).Increment(r.cached_tokens);
  m.tokens.Add({{"kind", "generated"}}).Increment(r.completion_tokens);
  if (!r.path.empty()) m.paths.Add({{"path", r.path}}).Increment();
}

void serve_metrics::count_response(const std::string& route, int status) {
  impl_->responses.Add({{"route", route}, {"status", std::to_string(status)}}).Increment();
}

void serve_metrics::count_cancelled(const char* reason) { impl_->cancelled.Add({{"reason", reason}}).Increment(); }

void serve_metrics::set_running(uint32_t running, uint32_t capacity) {
  impl_->running.Add({{"state", "running"}}).Set(running);
  impl_->running.Add({{"state", "capacity"}}).Set(capacity);
}

void serve_metrics::set_free_slots(uint32_t node, uint32_t free, uint32_t total) {
  impl_->slots.Add({{"node", std::to_string(node)}, {"state", "free"}}).Set(free);
  impl_->slots.Add({{"node", std::to_string(node)}, {"state", "total"}}).Set(total);
}

void serve_metrics::set_free_hbm(uint32_t engine, uint64_t bytes) {
  impl_->hbm.Add({{"engine", std::to_string(engine)}}).Set(double(bytes));
}

void serve_metrics::set_node_load(uint32_t node, uint32_t in_flight, uint64_t read_q_bytes) {
  impl_->node_requests.Add({{"node", std::to_string(node)}}).Set(in_flight);
  impl_->read_q.Add({{"node", std::to_string(node)}}).Set(double(read_q_bytes));
}

void serve_metrics::count_resumed(uint64_t rechecked, uint64_t differed) {
  impl_->resumed.Add({}).Increment();
  impl_->rechecked.Add({{"result", "equal"}}).Increment(double(rechecked - differed));
  impl_->rechecked.Add({{"result", "different"}}).Increment(double(differed));
}

void serve_metrics::count_node(const char* event) { impl_->nodes.Add({{"event", event}}).Increment(); }

void serve_metrics::set_verified(uint64_t verified, uint64_t mismatched, uint64_t skipped) {
  impl_->verified.Add({{"result", "equal"}}).Set(double(verified));
  impl_->verified.Add({{"result", "different"}}).Set(double(mismatched));
  impl_->verified.Add({{"result", "unchecked"}}).Set(double(skipped));
}

std::string serve_metrics::text() const { return pm::TextSerializer().Serialize(impl_->registry->Collect()); }

}  // namespace dualpath::observe
