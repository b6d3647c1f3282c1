#include "protocol/request_ids.hpp"
#include "actors/agent_client.hpp"

#include "core/turn_tokens.hpp"
#include "protocol/errors.hpp"
#include "protocol/waits.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <random>

#include "actors/client_retry.hpp"
#include "actors/engines.hpp"
#include "actors/turn_retry.hpp"
#include "actors/turn_submit.hpp"
#include "protocol/runtime_codec.hpp"

namespace dualpath::actors {

namespace {

struct client_state {
  static inline const char* name = "agent_client";
  client_actor::pointer self = nullptr;
  cluster_view_ptr view;
  agent_script script;
  caf::actor collector;
  uint32_t turn = 0;
  std::vector<int32_t> context;  // previous prompt + kept generation
  turn_payload current;
  bool in_flight = false;
  bool refused = false;  // the current turn was refused here (final: no engine involved)
  turn_retry retry;      // attempts of the current turn when nodes are lost (docs/design.md §13)
  std::optional<envelope<schema::TurnResult>> held;  // a failed attempt waiting for news of a lost node

  void start_turn() {
    if (turn >= script.turns.size()) {
      caf::anon_send(collector, atom::finish_v, script.agent);
      return;
    }
    const auto& shape = script.turns[turn];
    std::vector<int32_t> prompt;
    if (script.fixed_prompt) {
      prompt = *script.fixed_prompt;
    } else {
      prompt = turn_prompt(context, shape, script.seed, script.agent, turn, view->vocab);
    }
    current = {};
    current.request = request_id(script.agent, turn);
    current.agent = script.agent;
    current.turn = turn;
    current.tokens = std::move(prompt);
    current.gen = std::max<uint32_t>(1, shape.gen);
    current.times.submitted = now_ns();
    in_flight = true;
    refused = false;
    retry.new_turn();
    submit();
  }

  // Submits the current attempt (actors/turn_submit.hpp); a turn no engine could hold fails at once.
  void submit() {
    if (const auto why = submit_turn(self, *view, current)) {
      refused = true;
      self->send(self, atom::result_v, encode(failed_turn(current, *why)));
    }
  }

  // The current turn again, under the next attempt; late messages of the old one name an id no one waits for.
  // The collector counts re-runs by cause: turns migrated off a lost node, turns retried after a fault.
  void rerun(const std::string& why, rerun_cause cause = rerun_cause::node_lost) {
    retry.rerun();
    held.reset();
    const int64_t submitted = current.times.submitted;  // the turn's wait counts from its first submit
    current.times = {};
    current.times.submitted = submitted;
    current.request = request_id(script.agent, turn, retry.attempt);
    spdlog::info("agent {}: turn {} re-run as attempt {} ({})", script.agent, turn, retry.attempt, why);
    if (cause == rerun_cause::node_lost) caf::anon_send(collector, atom::lost_v, script.agent);
    else caf::anon_send(collector, atom::retry_v, script.agent);
    submit();
  }

  caf::result<envelope<schema::TurnPayload>> serve(uint64_t request) {
    // An earlier attempt's PE asks late: refuse, so it drops the request (its failure reply is ignored).
    if (!in_flight || request != current.request)
      return make_failure(errc::not_found, "request " + std::to_string(request) + " is not in flight");
    return encode(current);
  }

  void on_result(const envelope<schema::TurnResult>& e) {
    auto r = decode(e);
    if (!in_flight || r.request != current.request) return;  // no answer twice, none of an earlier attempt
    if (!r.error.empty() && !refused) return on_failed_attempt(*this, e, r);
    finish(e, r);
  }

  void finish(const envelope<schema::TurnResult>& e, const turn_result& r) {
    in_flight = false;
    held.reset();
    const auto& shape = script.turns[turn];
    const bool verify = script.verify_every > 0 && (turn % script.verify_every) == 0;
    turn_payload sent = current;
    if (!verify) sent.tokens.clear();
    caf::anon_send(collector, atom::result_v, e, encode(sent));
    context = next_context(std::move(current.tokens), shape, r.generated);
    ++turn;
    if (!r.error.empty()) {
      caf::anon_send(collector, atom::finish_v, script.agent);
      return;
    }
    const uint32_t tool_ms = script.replay_tool_time ? shape.tool_ms : 0;
    if (tool_ms > 0) self->delayed_send(self, std::chrono::milliseconds(tool_ms), atom::start_v);
    else start_turn();
  }
};

client_actor::behavior_type agent_client(client_actor::stateful_pointer<client_state> self, cluster_view_ptr view,
                                         agent_script script, caf::actor collector) {
  auto& st = self->state;
  st.self = self;
  st.view = std::move(view);
  st.script = std::move(script);
  st.collector = std::move(collector);
  return {
      [=](atom::turn, uint64_t request) { return self->state.serve(request); },
      [=](atom::result, const envelope<schema::TurnResult>& e) { self->state.on_result(e); },
      [](atom::tokens, const envelope<schema::TurnTokens>&) {},  // trace turns are not streamed
      [=](atom::start) { self->state.start_turn(); },
      [=](atom::lost, uint32_t losses, const std::vector<uint64_t>& requests) {
        on_lost_nodes(self->state, losses, requests);
      },
      [=](atom::expire, uint64_t request) { on_hold_expired(self->state, request); },
  };
}

}  // namespace

client_actor spawn_agent_client(caf::actor_system& sys, cluster_view_ptr view, agent_script script,
                                caf::actor collector) {
  return sys.spawn(agent_client, std::move(view), std::move(script), std::move(collector));
}

std::vector<int32_t> mooncake_tokens(const mooncake_request& r, uint32_t vocab) {
  std::vector<int32_t> tokens;
  tokens.reserve(r.input_length);
  for (uint64_t id : r.hash_ids) {
    std::mt19937_64 rng(id * 0x9e3779b97f4a7c15ull + 17);
    std::uniform_int_distribution<int32_t> pick(0, int32_t(vocab) - 1);
    for (uint32_t i = 0; i < mooncake_block_tokens && tokens.size() < r.input_length; ++i) tokens.push_back(pick(rng));
  }
  std::mt19937_64 rng(r.timestamp_ms * 31 + r.input_length);
  std::uniform_int_distribution<int32_t> pick(0, int32_t(vocab) - 1);
  while (tokens.size() < r.input_length) tokens.push_back(pick(rng));
  if (tokens.empty()) tokens.push_back(0);
  return tokens;
}

}  // namespace dualpath::actors
