// The EP group actor (docs/design.md §7.6): the group's prefill engines join rounds and report each layer
// they computed; the answers come when runtime::ep_rounds says so, and deadlines of its own keep every wait
// bounded whatever a member does.
#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <map>
#include <utility>

#include "actors/engines.hpp"
#include "actors/ep_group.hpp"
#include "protocol/errors.hpp"

namespace dualpath::actors {

namespace {

struct ep_group_state {
  static inline const char* name = "ep_group";
  ep_group_actor::pointer self = nullptr;
  std::shared_ptr<runtime::ep_rounds> rounds;
  double timeout_s = 60;
  std::map<uint32_t, caf::typed_response_promise<double>> joins;
  std::map<uint32_t, std::pair<uint32_t, caf::typed_response_promise<uint32_t>>> waits;  // engine -> layer

  // A member's layer may wait for its hit KV (the data plane answers within 2·timeout_s) and its compute
  // (timeout_s + 20 × the expected time, actors/engine_base.hpp): past both, it is not coming.
  double deadline_s() const { return 3 * timeout_s + 20 * rounds->max_layer_s(); }

  caf::typed_response_promise<double> join(uint32_t engine, double layer_s) {
    auto rp = self->make_response_promise<double>();
    joins[engine] = rp;
    apply(rounds->join(engine, layer_s, now_ns()));
    return rp;
  }
  caf::typed_response_promise<uint32_t> layer(uint32_t engine, uint32_t layer, double attention_s) {
    auto rp = self->make_response_promise<uint32_t>();
    waits[engine] = {layer, rp};
    apply(rounds->arrive(engine, layer, attention_s, now_ns()));
    return rp;
  }
  void leave(uint32_t engine) {
    apply(rounds->leave(engine, now_ns()));
    fail(engine, "engine " + std::to_string(engine) + " left its EP round");
  }
  void idle(uint32_t engine) { apply(rounds->idle(engine, now_ns())); }
  void expire(uint64_t round, uint32_t layer) { apply(rounds->expire(round, layer, now_ns())); }

  void apply(const runtime::ep_actions& a) {
    for (auto e : a.admitted)
      if (auto it = joins.find(e); it != joins.end()) {
        it->second.deliver(deadline_s());
        joins.erase(it);
      }
    for (auto e : a.released)
      if (auto it = waits.find(e); it != waits.end()) {
        it->second.second.deliver(it->second.first);
        waits.erase(it);
      }
    for (auto e : a.dropped) {
      spdlog::warn("ep group: engine {} dropped from round {} (no report of layer {} in time)", e, rounds->round(),
                   rounds->layer());
      fail(e, "engine " + std::to_string(e) + " is not in the EP round (deadline missed or pass ended)");
    }
    if (a.round_started) arm(rounds->round(), 0);
    if (a.layer_opened) arm(rounds->round(), rounds->layer());
    if (a.gathering) arm(rounds->round(), rounds->layers());
  }
  void arm(uint64_t round, uint32_t layer) {
    const auto d = std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(deadline_s()));
    self->delayed_send(self, d, atom::expire_v, round, layer);
  }
  void fail(uint32_t engine, const std::string& why) {
    if (auto it = joins.find(engine); it != joins.end()) {
      it->second.deliver(make_failure(errc::timeout, why));
      joins.erase(it);
    }
    if (auto it = waits.find(engine); it != waits.end()) {
      it->second.second.deliver(make_failure(errc::timeout, why));
      waits.erase(it);
    }
  }
};

ep_group_actor::behavior_type ep_group(ep_group_actor::stateful_pointer<ep_group_state> self,
                                       std::shared_ptr<runtime::ep_rounds> rounds, double timeout_s) {
  auto& st = self->state;
  st.self = self;
  st.rounds = std::move(rounds);
  st.timeout_s = timeout_s;
  return {
      [&st](atom::join, uint32_t engine, double layer_s) { return st.join(engine, layer_s); },
      [&st](atom::layer, uint32_t engine, uint32_t layer, double s) { return st.layer(engine, layer, s); },
      [&st](atom::leave, uint32_t engine) { st.leave(engine); },
      [&st](atom::idle, uint32_t engine) { st.idle(engine); },
      [&st](atom::expire, uint64_t round, uint32_t layer) { st.expire(round, layer); },
  };
}

}  // namespace

ep_group_actor spawn_ep_group(caf::actor_system& sys, std::shared_ptr<runtime::ep_rounds> rounds, double timeout_s) {
  return sys.spawn(ep_group, std::move(rounds), timeout_s);
}

}  // namespace dualpath::actors
