#include "actors/serve_client.hpp"

#include <caf/all.hpp>

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
  caf::typed_response_promise<envelope<schema::TurnResult>> answer;
  bool in_flight = false;

  caf::result<envelope<schema::TurnResult>> on_ask(const envelope<schema::TurnPayload>& e) {
    auto asked = decode(e);
    if (in_flight || asked.tokens.empty())  // the front end hands out each client to one request at a time
      return make_failure(errc::unavailable, in_flight ? "serve client busy" : "empty prompt");
    current = {};
    current.agent = agent;
    current.turn = turns++;
    current.request = request_id(agent, current.turn);
    current.tokens = std::move(asked.tokens);
    current.gen = std::max<uint32_t>(1, asked.gen);
    current.times.submitted = now_ns();
    in_flight = true;
    answer = self->make_response_promise<envelope<schema::TurnResult>>();
    if (const auto why = submit_turn(self, *view, current)) finish(encode(failed_turn(current, *why)));
    return answer;
  }

  caf::result<envelope<schema::TurnPayload>> serve(uint64_t request) {
    if (!in_flight || request != current.request)
      return make_failure(errc::not_found, "request " + std::to_string(request) + " is not in flight");
    return encode(current);
  }

  void on_result(const envelope<schema::TurnResult>& e) {
    if (!in_flight || decode(e).request != current.request) return;  // late news of an earlier request
    finish(e);
  }

  void finish(const envelope<schema::TurnResult>& e) {
    in_flight = false;
    if (answer.pending()) answer.deliver(e);
  }
};

serve_client_actor::behavior_type serve_client(serve_client_actor::stateful_pointer<serve_client_state> self,
                                               cluster_view_ptr view, uint32_t agent) {
  self->state.self = self;
  self->state.view = std::move(view);
  self->state.agent = agent;
  return {
      [=](atom::ask, const envelope<schema::TurnPayload>& e) { return self->state.on_ask(e); },
      [=](atom::turn, uint64_t request) { return self->state.serve(request); },
      [=](atom::result, const envelope<schema::TurnResult>& e) { self->state.on_result(e); },
      [](atom::start) {},  // turns start when asked
      // An embedded cluster loses no node; the multi-process front end re-runs turns (docs/design.md §18).
      [](atom::lost, uint32_t, const std::vector<uint64_t>&) {},
      [](atom::expire, uint64_t) {},
  };
}

}  // namespace

serve_client_actor spawn_serve_client(caf::actor_system& sys, cluster_view_ptr view, uint32_t agent) {
  return sys.spawn(serve_client, std::move(view), agent);
}

}  // namespace dualpath::actors
