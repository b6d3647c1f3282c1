// The scheduler actor: handlers are one line each; the work is in scheduler_state and schedule/.
#include "protocol/request_ids.hpp"
#include "actors/scheduler.hpp"
#include "protocol/errors.hpp"

#include <caf/all.hpp>
#include <kj/exception.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <tuple>

#include "actors/cluster_view.hpp"
#include "core/status.hpp"
#include "protocol/scheduler_codec.hpp"
#include "schedule/fresh_view.hpp"
#include "schedule/turn_placements.hpp"

namespace dualpath::actors {

namespace sch = dualpath::schedule;

// ---- state ----

namespace {

// Runs `f`; a malformed envelope or another bad input becomes an error reply, not a dead scheduler.
template <class F>
auto guarded(const char* what, F f) -> caf::result<decltype(f())> {
  try {
    return f();
  } catch (const kj::Exception& e) {
    spdlog::warn("scheduler: malformed {}: {}", what, e.getDescription().cStr());
    return make_failure(errc::bad_input, std::string("malformed ") + what);
  } catch (const std::exception& e) {
    spdlog::warn("scheduler: bad {}: {}", what, e.what());
    return make_failure(errc::bad_input, e.what());
  }
}

struct scheduler_state {
  static inline const char* name = "scheduler";

  // What the policies read: the leaders' reports plus the charges they do not count yet (§7.1).
  sch::fresh_view view{0};
  std::deque<sch::request_info> waiting;
  std::unique_ptr<sch::policy> active;
  sch::policy_params params;
  std::vector<policy_switch> switches;
  scheduler_counters counters;
  sch::turn_placements placements;  // each agent's turn in flight: PE and DE node (docs/design.md §13)

  void init(scheduler_options opts) {
    active = sch::make_policy(opts.policy);
    params = opts.params;
    switches = std::move(opts.switches);
    view = sch::fresh_view(opts.charge_expiry_s);
  }

  uint64_t submit(const envelope<schema::Request>& e) {
    waiting.push_back(decode(e));
    placements.submitted(agent_of(waiting.back().id));
    ++counters.submitted;
    return waiting.size();
  }

  void report(const envelope<schema::GroupReport>& e, double now_s) {
    try {
      view.report(decode(e), now_s);
    } catch (const kj::Exception& ex) {
      spdlog::warn("scheduler: malformed group report dropped: {}", ex.getDescription().cStr());
    }
  }

  envelope<schema::Assignments> fetch(const envelope<schema::Fetch>& e, double now_s) {
    const uint32_t node = decode(e);
    ++counters.fetches;
    const auto out = active->assign(view.snapshot(), node, waiting, params);
    view.record(out, now_s);
    counters.assigned += out.size();
    for (const auto& a : out) {
      placements.placed(agent_of(a.request.id), a);
      auto& n = a.path == sch::read_path::pe   ? counters.assigned_pe
                : a.path == sch::read_path::de ? counters.assigned_de
                                               : counters.assigned_split;
      ++n;
    }
    return encode(out);
  }

  envelope<schema::PolicyStatus> set_policy(const std::string& name) {
    if (name == active->name()) return status(true, "");
    try {
      active = sch::make_policy(name);
      ++counters.switches;
      spdlog::info("scheduler: policy switched to {} ({} requests waiting)", name, waiting.size());
      return status(true, "");
    } catch (const user_error& e) {
      return status(false, e.what());  // the running policy stays
    }
  }

  envelope<schema::PolicyStatus> status(bool ok, const std::string& message) const {
    return encode(policy_status{ok, std::string(active->name()), sch::policy_names(), message});
  }

  envelope<schema::SchedulerStats> stats() const {
    scheduler_counters c = counters;
    c.policy = std::string(active->name());
    c.waiting = waiting.size();
    c.prefill_engines = uint32_t(view.snapshot().engine_count(sch::role::prefill));
    c.decode_engines = uint32_t(view.snapshot().engine_count(sch::role::decode));
    c.pending_charges = view.pending();
    c.expired_charges = view.expired();
    const auto& nodes = view.snapshot().nodes;
    const uint32_t span = nodes.empty() ? 0 : nodes.back().node + 1;
    const auto in_flight = placements.per_node(span);
    for (const auto& n : nodes) c.nodes.push_back({n, in_flight[n.node]});
    return encode(c);
  }

  // docs/design.md §13: nothing more goes to the lost node; its turns in flight are named for re-running.
  std::vector<uint64_t> lose_node(uint32_t node) {
    const size_t uncharged = view.remove_node(node);
    auto turns = placements.lose(node);
    spdlog::warn("scheduler: node {} lost: {} turns in flight there, {} requests' charges dropped", node, turns.size(),
                 uncharged);
    return turns;
  }

  // docs/design.md §18: a waiting request leaves the queue; an assigned one is named by its engines.
  std::tuple<uint32_t, uint32_t> cancel(uint64_t request) {
    constexpr uint32_t none = UINT32_MAX;
    const auto it = std::find_if(waiting.begin(), waiting.end(), [&](const auto& r) { return r.id == request; });
    if (it != waiting.end()) {
      waiting.erase(it);
      return {none, none};
    }
    const auto engines = placements.engines_of(agent_of(request), request);
    if (!engines) return {none, none};
    return {engines->first, engines->second};
  }

  // docs/design.md §7.9: no new work for the node; what it holds finishes there.
  std::vector<uint64_t> drain_node(uint32_t node) {
    view.remove_node(node);
    auto turns = placements.decoding_on(node);
    spdlog::info("scheduler: node {} drains to change role: {} turns in flight there", node, turns.size());
    return turns;
  }

  uint32_t rejoin_node(uint32_t node) {
    view.restore_node(node);
    spdlog::info("scheduler: node {} rejoined; its engines take work from its next report", node);
    return node;
  }

  void apply_switch(uint32_t index) {
    if (index < switches.size()) set_policy(switches[index].policy);
  }
};

// Seconds on the actor's clock (CAF's test clock in tests): the fresh view's charges age by it.
double now_s(scheduler_actor::pointer self) {
  return std::chrono::duration<double>(self->clock().now().time_since_epoch()).count();
}

scheduler_actor::behavior_type scheduler(scheduler_actor::stateful_pointer<scheduler_state> self,
                                         scheduler_options opts) {
  self->state.init(std::move(opts));
  const auto& sw = self->state.switches;
  for (uint32_t i = 0; i < sw.size(); ++i) {
    const auto delay = std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(sw[i].at_s));
    self->delayed_send(caf::actor_cast<scheduler_actor>(self), delay, atom::scripted_v, i);
  }
  return {
      [=](atom::submit, const envelope<schema::Request>& e) {
        return guarded("request", [&] { return self->state.submit(e); });
      },
      [=](atom::report, const envelope<schema::GroupReport>& e) { self->state.report(e, now_s(self)); },
      [=](atom::fetch, const envelope<schema::Fetch>& e) {
        return guarded("fetch", [&] { return self->state.fetch(e, now_s(self)); });
      },
      [=](atom::policy, atom::set, const std::string& name) { return self->state.set_policy(name); },
      [=](atom::policy, atom::get) { return self->state.status(true, ""); },
      [=](atom::stats) { return self->state.stats(); },
      [=](atom::scripted, uint32_t index) { self->state.apply_switch(index); },
      [=](atom::lost, uint32_t node) { return self->state.lose_node(node); },
      [=](atom::rejoin, uint32_t node) { return self->state.rejoin_node(node); },
      [=](atom::drain, uint32_t node) { return self->state.drain_node(node); },
      [=](atom::cancel, uint64_t request) -> caf::result<uint32_t, uint32_t> {
        auto [pe, de] = self->state.cancel(request);
        return {pe, de};
      },
  };
}

}  // namespace

scheduler_actor spawn_scheduler(caf::actor_system& sys, scheduler_options options) {
  sch::make_policy(options.policy);  // throws user_error with the known names
  for (const auto& s : options.switches) {
    if (!sch::is_policy_name(s.policy)) sch::make_policy(s.policy);  // throws with the known names
    if (!(s.at_s >= 0)) throw user_error("schedule.switch: at_s must be ≥ 0 seconds, got " + std::to_string(s.at_s));
  }
  if (!(options.charge_expiry_s > 0))
    throw user_error("scheduler: charge expiry must be > 0 seconds, got " + std::to_string(options.charge_expiry_s));
  std::stable_sort(options.switches.begin(), options.switches.end(),
                   [](const policy_switch& a, const policy_switch& b) { return a.at_s < b.at_s; });
  return sys.spawn(scheduler, std::move(options));
}

}  // namespace dualpath::actors
