#pragma once
// `dualpath serve` (docs/design.md §18): the embedded cluster behind an OpenAI-compatible HTTP API. A request's
// conversation is rendered by the model family's chat template, tokenized, and run as one turn by one of a
// fixed pool of serving clients; its blocks are keyed like any turn's, so the next turn of the conversation
// hits what this one persisted.
#include <cstdint>
#include <functional>
#include <string>

#include "core/cluster_config.hpp"

namespace dualpath::serve {

struct serve_options {
  cluster_config config;
  std::string policy = "dualpath";  // a run policy (core/modes.hpp)
  std::string host = "127.0.0.1";
  uint16_t port = 8000;            // 0: any free port
  std::string chat_template;       // a family name (text/chat_template.hpp); "" = the model directory's
  uint32_t clients = 0;            // requests served at once (0: the cluster file's serve.max_requests)
  double request_timeout_s = 300;  // a request not answered by then is cancelled and answered 503
  double drain_s = 6;              // on SIGTERM, how long requests in flight may still take
  std::string api_key;             // required (Bearer) on every request when set; needed beyond loopback
  bool verify = false;             // recompute every answer from scratch and compare (serve/answer_check.hpp)
  std::string report_file;         // written when the server stops: the answers as a run (serve/served_report.hpp)
  // One process per node (docs/design.md §13), as `run --processes`: spawned from `node_program`, or, with
  // node_registry set, joining by hand at that HOST:PORT (on_registry: where they must connect).
  bool processes = false;
  std::string node_program, node_registry;
  std::function<void(const std::string&)> on_registry;
  // max_tokens: 16 when a request gives none; beyond the limit a 400. The real bound is a decode engine's HBM:
  // a prompt and max_tokens whose KV does not fit one are refused as context_length_exceeded (agents such as
  // Qwen Code ask 32,000 and stop at the end of turn).
  uint32_t max_tokens_default = 16, max_tokens_limit = 131072;
  uint32_t max_tokens_cap = 0;  // --max-tokens: the most a request generates, whatever it asks (0: no cap)
  std::function<void(uint16_t)> on_listening;  // the bound port, once requests are taken
};

// What the server did, once it has stopped.
struct serve_summary {
  uint64_t requests = 0;                                 // answered whole
  uint64_t verified = 0, mismatched = 0, unchecked = 0;  // with `verify`: answers equal to a full recompute, ...
};

// Serves until SIGTERM or SIGINT, then stops taking requests (503), answers those in flight within `drain_s`
// and returns. user_error on a bad cluster file, model directory or address, or a non-loopback address
// without an API key.
serve_summary run_server(const serve_options& options);

}  // namespace dualpath::serve
