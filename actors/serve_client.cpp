#include "actors/serve_client.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <optional>

#include "actors/client_retry.hpp"
#include "actors/engines.hpp"
#include "actors/turn_submit.hpp"
#include "protocol/request_ids.hpp"
#include "protocol/runtime_codec.hpp"

namespace dualpath::actors {

namespace {

struct serve_client_state {
  static inline const char* name = "serve_client";
  serve_client_actor::pointer self = nullptr;
  cluster_view_ptr view;
  uint32_t agent = 0;
  uint32_t turns = 0;  // asked so far: the turn number of the request id
  turn_payload current;
  caf::actor asker;  // the front end's request, told of tokens and the result
  bool in_flight = false;
  turn_retry retry;  // attempts of the current turn when nodes are lost (docs/design.md §13, §18)
  std::optional<envelope<schema::TurnResult>> held;  // a failed attempt waiting for news of a lost node

  void on_ask(const envelope<schema::TurnPayload>& e) {
    auto from = caf::actor_cast<caf::actor>(self->current_sender());
    auto asked = decode(e);
    if (in_flight || asked.tokens.empty()) {  // the front end hands out each client to one request at a time
      asked.agent = agent;
      return caf::anon_send(from, atom::result_v,
                            encode(failed_turn(asked, in_flight ? "serve client busy" : "empty prompt")));
    }
    // The asked turn whole (prompt, generation, stream, stop tokens, sampling); who it is, is the client's.
    current = std::move(asked);
    current.agent = agent;
    current.turn = turns++;
    current.request = request_id(agent, current.turn);
    current.gen = std::max<uint32_t>(1, current.gen);
    current.times.submitted = now_ns();
    asker = std::move(from);
    in_flight = true;
    retry.new_turn();
    held.reset();
    if (const auto why = submit_turn(self, *view, current)) finish(encode(failed_turn(current, *why)));
  }

  // docs/design.md §18: the turn again under the next attempt, from its first token; the front end takes the
  // tokens it has not sent yet and checks the ones it has against them. Late news of the old attempt names
  // an id no one waits for. Either cause is logged alike (a run's collector counts them apart).
  void rerun(const std::string& why, rerun_cause) {
    retry.rerun();
    held.reset();
    current.request = request_id(agent, current.turn, retry.attempt);
    spdlog::info("serve client {}: turn {} re-run as attempt {} ({})", agent, current.turn, retry.attempt, why);
    if (const auto failed = submit_turn(self, *view, current)) finish(encode(failed_turn(current, *failed)));
  }

  caf::result<envelope<schema::TurnPayload>> serve(uint64_t request) {
    if (!in_flight || request != current.request)
      return make_failure(errc::not_found, "request " + std::to_string(request) + " is not in flight");
    return encode(current);
  }

  void on_tokens(const envelope<schema::TurnTokens>& e) {
    if (in_flight && decode(e).request == current.request) caf::anon_send(asker, atom::tokens_v, e);
  }

  void on_result(const envelope<schema::TurnResult>& e) {
    const auto r = decode(e);
    if (!in_flight || r.request != current.request) return;  // late news of an earlier request
    if (!r.error.empty()) return on_failed_attempt(*this, e, r);
    finish(e);
  }

  void finish(const envelope<schema::TurnResult>& e, const turn_result& = {}) {
    in_flight = false;
    held.reset();
    caf::anon_send(asker, atom::result_v, e);
    asker = nullptr;
  }

  // docs/design.md §18: the scheduler drops the request if it still waits, or names the engines that hold it.
  // The client is free at once; news of the cancelled request is ignored from now on (another id).
  void cancel() {
    if (!in_flight) return;
    in_flight = false;
    held.reset();
    asker = nullptr;
    const uint64_t id = current.request;
    auto v = view;
    self->request(view->scheduler, waits_of(view->config).request(), atom::cancel_v, id)
        .then(
            [v, id](uint32_t pe, uint32_t de) {
              if (pe != UINT32_MAX) caf::anon_send(v->prefill_engine(pe), atom::cancel_v, id);
              if (de != UINT32_MAX) caf::anon_send(v->decode_engine(de), atom::cancel_v, id);
            },
            [id](caf::error& err) { spdlog::warn("request {:x}: cancel not delivered: {}", id, describe(err)); });
  }
};

serve_client_actor::behavior_type serve_client(serve_client_actor::stateful_pointer<serve_client_state> self,
                                               cluster_view_ptr view, uint32_t agent) {
  self->state.self = self;
  self->state.view = std::move(view);
  self->state.agent = agent;
  return {
      [=](atom::ask, const envelope<schema::TurnPayload>& e) { self->state.on_ask(e); },
      [=](atom::cancel) { self->state.cancel(); },
      [=](atom::turn, uint64_t request) { return self->state.serve(request); },
      [=](atom::result, const envelope<schema::TurnResult>& e) { self->state.on_result(e); },
      [=](atom::tokens, const envelope<schema::TurnTokens>& e) { self->state.on_tokens(e); },
      [](atom::start) {},  // turns start when asked
      [=](atom::lost, uint32_t losses, const std::vector<uint64_t>& requests) {
        on_lost_nodes(self->state, losses, requests);
      },
      [=](atom::expire, uint64_t request) { on_hold_expired(self->state, request); },
  };
}

}  // namespace

serve_client_actor spawn_serve_client(caf::actor_system& sys, cluster_view_ptr view, uint32_t agent) {
  return sys.spawn(serve_client, std::move(view), agent);
}

}  // namespace dualpath::actors
