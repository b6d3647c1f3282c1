#include "actors/leader.hpp"
#include "actors/request_watch.hpp"
#include "protocol/errors.hpp"
#include "protocol/waits.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "protocol/runtime_codec.hpp"
#include "protocol/scheduler_codec.hpp"
#include "schedule/report_acks.hpp"

namespace dualpath::actors {

namespace {

constexpr auto report_period = std::chrono::milliseconds(2);
// A report that repeats the last one sent goes out only every this many ticks (docs/design.md §7.1).
constexpr uint32_t repeat_every_ticks = 10;

struct leader_state {
  static inline const char* name = "leader";
  leader_actor::pointer self = nullptr;
  cluster_view_ptr view;
  uint32_t node = 0;
  runtime::node_services* io = nullptr;
  schedule::node_snapshot group;
  schedule::report_acks acks;  // which requests the engines' numbers count
  bool fetching = false;
  schedule::report_gate gate{repeat_every_ticks};
  // A fetching leader asks the scheduler every tick: its deadline is kept here, not by CAF's clock thread.
  request_watch watch;

  bool prefill() const { return view->is_prefill_node(node); }
  // A prefill group of several nodes fetches through its first node's leader only: one fetch considers every
  // engine of the group (docs/design.md §7.2), and the other leaders only report.
  bool fetches() const { return prefill() && node % view->config.pe_group_nodes == 0; }

  void on_engine(uint32_t engine, uint32_t seq, uint64_t tok, uint64_t free_hbm, std::vector<uint64_t> ids) {
    for (size_t i = 0; i < group.engines.size(); ++i) {
      auto& e = group.engines[i];
      if (e.engine != engine) continue;
      e.seq = seq;
      e.tok = tok;
      e.free_hbm = free_hbm;
      acks.on_engine(i, std::move(ids));
      return;
    }
  }

  uint32_t held() const {
    uint32_t n = 0;
    for (const auto& e : group.engines) n += e.seq;
    return n;
  }

  // The report names the requests its numbers count, so the scheduler's fresh view drops exactly those
  // charges and keeps the rest (docs/design.md §7.1).
  schedule::group_report make_report() {
    schedule::group_report r;
    const auto reads = io->take_read_report();
    r.read_acked = reads.requests;
    group.read_q = reads.read_q;
    r.node = group;
    r.acked = acks.take();
    return r;
  }

  // An idle node's report says again what the last one said; across node processes each is a message
  // through the middleman every 2 ms, so a repeat goes out only every repeat_every_ticks ticks.
  void report() {
    auto r = make_report();
    if (gate.send(r)) self->send(view->scheduler, atom::report_v, encode(r));
  }

  void on_tick() {
    report();
    if (fetches() && !fetching) {
      fetching = true;
      watch.request(self, view->scheduler, waits_of(view->config).request(), atom::fetch_v, encode_fetch(node))
          .then(
              [this](const envelope<schema::Assignments>& e) {
                fetching = false;
                const auto list = decode(e);
                std::vector<bool> named(view->engine_count(), false);
                for (const auto& a : list) named.at(a.pe) = true;
                for (size_t engine = 0; engine < named.size(); ++engine)
                  if (named[engine]) self->send(view->prefill_engine(engine), atom::assign_v, e);
              },
              [this](caf::error& err) {
                fetching = false;
                // At shutdown the scheduler may stop first; that is not worth a warning.
                if (err == caf::sec::request_receiver_down) return;
                spdlog::warn("leader {}: fetch failed: {}", node, describe(err));
              });
    }
    self->delayed_send(self, report_period, atom::tick_v);
  }
};

leader_actor::behavior_type leader(leader_actor::stateful_pointer<leader_state> self, const cluster_view_ptr& view,
                                   uint32_t node, runtime::node_services* io) {
  auto& st = self->state;
  st.self = self;
  st.view = view;
  st.node = node;
  st.io = io;
  st.group.node = node;
  st.group.kind = view->is_prefill_node(node) ? schedule::role::prefill : schedule::role::decode;
  st.acks = schedule::report_acks(view->config.engines_per_node);
  for (uint32_t i = 0; i < view->config.engines_per_node; ++i) {
    schedule::engine_snapshot e;
    e.engine = node * view->config.engines_per_node + i;
    e.node = node;
    e.free_hbm = io->hbm(e.engine).free_bytes();
    st.group.engines.push_back(e);
  }
  return {
      [=](atom::engine_st, uint32_t engine, uint32_t seq, uint64_t tok, uint64_t free_hbm,
          const std::vector<uint64_t>& ids) { self->state.on_engine(engine, seq, tok, free_hbm, ids); },
      [=](atom::tick) { self->state.on_tick(); },
      [=](atom::expire) { self->state.watch.on_expire(self); },
      [=](atom::held) { return self->state.held(); },
  };
}

}  // namespace

leader_actor spawn_leader(caf::actor_system& sys, cluster_view_ptr view, uint32_t node, runtime::node_services* io) {
  return sys.spawn(leader, std::move(view), node, io);
}

}  // namespace dualpath::actors
