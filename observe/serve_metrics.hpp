#pragma once
// Prometheus metrics of `dualpath serve` (docs/design.md §15, §18), on the serving port's GET /metrics: what
// the HTTP clients saw (latency, time to first token, inter-token latency), tokens by kind, requests by
// status, path and outcome, and the buffers and HBM that cancelled requests must give back. prometheus-cpp
// stays behind this interface.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dualpath::observe {

// One answered request, as its client saw it.
struct served_request {
  std::string endpoint;  // chat_completions, completions, responses
  uint32_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  double ttft_s = 0, e2e_s = 0;
  std::vector<double> inter_token_s;
  std::string path;      // the read path of its hit KV ("" when unknown: cut short by a stop string)
  double arrived_s = 0;  // since the server started
  std::optional<double> second_token_s, last_token_s;  // since arrival
};

class serve_metrics {
 public:
  serve_metrics();
  ~serve_metrics();
  serve_metrics(const serve_metrics&) = delete;
  serve_metrics& operator=(const serve_metrics&) = delete;

  void request_done(const served_request& r);
  void count_response(const std::string& route, int status);  // every response, errors included
  void count_cancelled(const char* reason);                   // "hung_up", "deadline", "stop_string"
  void set_running(uint32_t running, uint32_t capacity);
  void set_free_slots(uint32_t node, uint32_t free, uint32_t total);
  void set_free_hbm(uint32_t engine, uint64_t bytes);
  // Turns in flight on a node (its PE or DE work), and its SNIC's read queue, as the scheduler saw them when scraped.
  void set_node_load(uint32_t node, uint32_t in_flight, uint64_t read_q_bytes);
  // A stream whose turn was run again after a node was lost (docs/design.md §18): the tokens the client had
  // already, made again and compared (`differed` of them not the same).
  void count_resumed(uint64_t rechecked, uint64_t differed);
  // A node process lost ("lost") or back after a loss ("rejoined"), docs/design.md §13.
  void count_node(const char* event);
  // serve --verify: answers equal to a full recompute, different, and not checked, so far.
  void set_verified(uint64_t verified, uint64_t mismatched, uint64_t skipped);
  // Every metric in Prometheus' text format.
  std::string text() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace dualpath::observe
