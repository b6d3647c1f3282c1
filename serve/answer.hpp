#pragma once
// A request's turn, run and answered (docs/design.md §18): its prompt checked, a serving client taken from the
// pool (429 when none is free), its tokens turned into text as the engines make them, written as one JSON
// answer or as a stream of events, and cancelled when the client hangs up or the deadline passes.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/cluster_view.hpp"
#include "api/chat_request.hpp"
#include "serve/admission.hpp"
#include "serve/generated_ids.hpp"
#include "serve/served_model.hpp"

namespace caf {
class actor_system;
}

namespace dualpath::observe {
class serve_metrics;
}

namespace dualpath::serve {

class answer_checker;
class served_report;

enum class api_kind { chat, text, responses };

// What one request asks of the cluster.
struct turn_ask {
  api_kind kind = api_kind::chat;
  std::string model;  // as the request named it
  std::vector<int32_t> ids;
  api::generation gen;
  // Tools offered to the model: with any, tool calls are parsed out of the answer, so its text is not
  // streamed before the end.
  uint32_t tools = 0;
  bool return_token_ids = false;  // text completions: the answer carries its generated ids
};

// What every request's handler shares.
struct serving_context {
  serving_context(caf::actor_system& s, const served_model& m, const actors::cluster_view& v, admission_limits a)
      : sys(s), model(m), view(v), admit(a) {}
  caf::actor_system& sys;
  const served_model& model;
  const actors::cluster_view& view;
  std::vector<actors::serve_client_actor> clients;
  admission admit;
  double request_timeout_s = 300;
  uint32_t max_tokens_cap = 0;  // serve --max-tokens: a request asking more is served this many (0: no cap)
  int64_t started = 0;          // Unix seconds: the answers' ids
  std::atomic<uint64_t> serial{0};
  std::atomic<bool> draining{false};
  observe::serve_metrics* metrics = nullptr;
  generated_ids answers;              // the ids behind recent answers' text, for the conversations' next turns
  answer_checker* checker = nullptr;  // serve --verify: every whole answer is recomputed (serve/answer_check.hpp)
  served_report* report = nullptr;    // serve --report: every answer as a turn of a run (serve/served_report.hpp)
  std::chrono::steady_clock::time_point up_since = std::chrono::steady_clock::now();  // the report's clock
};

void answer_turn(serving_context& ctx, const httplib::Request& req, httplib::Response& res, turn_ask ask);

// JSON answers and errors in the API's shape.
void send_json(httplib::Response& res, int status, const nlohmann::ordered_json& body);
void send_error(httplib::Response& res, const api::api_error& e);

}  // namespace dualpath::serve
