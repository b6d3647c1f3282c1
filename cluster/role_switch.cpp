// Adaptive P/D in the embedded runtime (cluster/role_switch.hpp, docs/design.md §7.9).
#include "cluster/role_switch.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "actors/engines.hpp"
#include "core/progress.hpp"
#include "protocol/errors.hpp"
#include "protocol/scheduler_codec.hpp"
#include "protocol/waits.hpp"

namespace dualpath::cluster {

role_switcher::role_switcher(role_switch_parts parts)
    : p_(std::move(parts)),
      driver_({p_.view->config.planner_high, p_.view->config.planner_low, p_.view->config.planner_tpot_slo_s, 1},
              p_.view->config.planner_sustain, p_.view->config.planner_cooldown_s) {}

void role_switcher::begin(int64_t t0_ns) {
  t0_ = t0_ns;
  window_start_s_ = 0;
  busy_at_window_ = progress::prefill_busy_ns().load(std::memory_order_relaxed);
}

uint32_t role_switcher::prefill_nodes() const {
  uint32_t n = 0;
  for (uint32_t node = 0; node < p_.view->nodes(); ++node) n += p_.view->is_prefill_node(node) ? 1 : 0;
  return n;
}

void role_switcher::tick(caf::scoped_actor& self, const std::vector<report::turn_record>& records) {
  for (size_t k = 0; k < draining_.size();) {
    drain& d = draining_[k];
    const bool quiet = d.pending.empty() && holds_nothing(self, d.move.node);
    // Two quiet checks in a row: a message already on its way to the node (an assignment fetched just before
    // the drain) has arrived by the second.
    if (quiet && d.quiet) {
      switch_role(d);
      give_back(self, d.move.node);
      d.move.done_s = seconds(now_ns());
      driver_.switched(d.move.done_s);
      spdlog::info("launcher: node {} serves as a {} node ({:.2f} s to drain, {:.0f} ms to switch)", d.move.node,
                   d.move.to_prefill ? "prefill" : "decode", d.move.drained_s - d.move.decided_s,
                   1e3 * (d.move.done_s - d.move.drained_s));
      switches_.push_back(std::move(d.move));
      draining_.erase(draining_.begin() + long(k));
      continue;
    }
    d.quiet = quiet;
    const double limit = 4 * p_.view->config.timeout_s;
    if (double(now_ns() - d.since) / 1e9 > limit) {
      spdlog::warn("launcher: node {} still holds work {:g} s after it began to drain; it keeps its role", d.move.node,
                   limit);
      give_back(self, d.move.node);
      driver_.switched(seconds(now_ns()));
      draining_.erase(draining_.begin() + long(k));
      continue;
    }
    ++k;
  }
  plan(self, records);
}

schedule::role_load role_switcher::window_load(const scheduler_counters& stats,
                                               const std::vector<report::turn_record>& records, double now_s) {
  const auto& c = p_.view->config;
  schedule::role_load l;
  l.engines_per_node = c.engines_per_node;
  l.window_s = std::max(1e-3, now_s - window_start_s_);
  const uint64_t busy = progress::prefill_busy_ns().load(std::memory_order_relaxed);
  l.prefill_busy_s = double(busy - busy_at_window_) / 1e9;
  busy_at_window_ = busy;
  const uint64_t hbm = uint64_t(c.hbm_gb * 1e9);
  uint64_t backlog = 0, hbm_used = 0, hbm_total = 0, slots = 0, active = 0, max_free = 0;
  bool pe_idle = false;
  // The scheduler's view holds the nodes serving now (a draining node has left it).
  for (const auto& n : stats.nodes) {
    const bool prefill = n.node.kind == schedule::role::prefill;
    (prefill ? l.prefill_nodes : l.decode_nodes) += 1;
    for (const auto& e : n.node.engines) {
      if (prefill) {
        backlog += e.tok;
        pe_idle = pe_idle || (e.tok == 0 && e.seq == 0);
        continue;
      }
      hbm_used += hbm - std::min(hbm, e.free_hbm);
      max_free = std::max(max_free, e.free_hbm);
      hbm_total += hbm;
      active += e.seq;
      slots += std::min<uint64_t>(e.seq, c.max_decode_batch);
    }
  }
  l.prefill_backlog_s = p_.prefill_tokens_per_s > 0 ? double(backlog) / p_.prefill_tokens_per_s : 0;
  if (hbm_total) l.decode_hbm = double(hbm_used) / double(hbm_total);
  if (l.decode_nodes)
    l.decode_slots = double(slots) / (double(l.decode_nodes) * c.engines_per_node * c.max_decode_batch);
  // As in the simulator, a request unplaced while a prefill engine idles waits for decode; here only while no
  // decode engine has room for two requests of the mean size decoding now. The runtime's prefill engines fetch
  // their work, so a queue seen beside an idle prefill engine is often only waiting for that fetch, and read
  // as decode pressure it kept nodes from moving to prefill.
  const bool decode_full = active > 0 && max_free < 2 * hbm_used / active;
  if (pe_idle && decode_full) l.decode_waiting = double(stats.waiting) / double(active);
  double tpot = 0;
  uint64_t n = 0;
  for (size_t i = records_at_window_; i < records.size(); ++i)
    if (records[i].has_tpot) tpot += records[i].tpot_s, ++n;
  records_at_window_ = records.size();
  if (n) l.tpot_s = tpot / double(n);
  return l;
}

void role_switcher::plan(caf::scoped_actor& self, const std::vector<report::turn_record>& records) {
  const double now = seconds(now_ns());
  if (now - window_start_s_ < p_.view->config.planner_window_s) return;
  std::optional<scheduler_counters> stats;
  self->request(p_.view->scheduler, std::chrono::milliseconds(500), atom::stats_v)
      .receive([&](const envelope<schema::SchedulerStats>& e) { stats = decode(e); }, [](caf::error&) {});
  if (!stats) return;  // the next tick asks again
  const schedule::role_load l = window_load(*stats, records, now);
  window_start_s_ = now;
  const uint64_t done = records.size(), in_flight = stats->submitted > done ? stats->submitted - done : 0;
  const schedule::role_plan plan = driver_.step(now, l, done, in_flight);
  const std::string why = schedule::describe(l, driver_.params());
  spdlog::debug("launcher: planner window at {:.2f} s: {} ({} turns done, {} in flight): {}", now, why, done, in_flight,
                schedule::to_string(plan.move));
  if (plan.move == schedule::role_move::none) return;
  const bool to_prefill = plan.move == schedule::role_move::to_prefill;
  // The nodes of the giving role that hold the least: they drain soonest.
  std::vector<std::pair<uint64_t, uint32_t>> held;
  for (const auto& n : stats->nodes) {
    if ((n.node.kind == schedule::role::prefill) == to_prefill) continue;
    uint64_t tok = 0;
    for (const auto& e : n.node.engines) tok += e.tok;
    held.emplace_back(tok, n.node.node);
  }
  std::sort(held.begin(), held.end());
  for (uint32_t k = 0; k < plan.nodes && k < held.size(); ++k) start_drain(self, held[k].second, to_prefill, why);
}

void role_switcher::start_drain(caf::scoped_actor& self, uint32_t node, bool to_prefill, const std::string& why) {
  std::optional<std::vector<uint64_t>> turns;
  self->request(p_.view->scheduler, waits_of(p_.view->config).request(), atom::drain_v, node)
      .receive([&](const std::vector<uint64_t>& t) { turns = t; },
               [&](caf::error& e) { spdlog::warn("launcher: node {} cannot drain: {}", node, describe(e)); });
  if (!turns) return;
  const double now = seconds(now_ns());
  spdlog::info("launcher: node {} drains to become a {} node ({} turns to finish): {}", node,
               to_prefill ? "prefill" : "decode", turns->size(), why);
  drain d;
  d.move = {node, to_prefill, now, 0, 0, why};
  d.since = now_ns();
  d.pending.insert(turns->begin(), turns->end());
  draining_.push_back(std::move(d));
  driver_.started(1);
}

void role_switcher::on_result(uint64_t request) {
  for (auto& d : draining_) d.pending.erase(request);
}

// Nothing left on the node's engines: no request counted by their last reports, and nothing in their HBM
// but what every engine of its role holds from the start (a decode engine's all-to-all buffer, or the front
// a prefill engine keeps for peers that last knew it as a decode node).
bool role_switcher::holds_nothing(caf::scoped_actor& self, uint32_t node) {
  std::optional<uint32_t> held;
  self->request(p_.view->leader(node), std::chrono::milliseconds(500), atom::held_v)
      .receive([&](uint32_t n) { held = n; }, [](caf::error&) {});
  if (!held || *held > 0) return false;
  const auto& c = p_.view->config;
  auto& io = *(*p_.ios)[node];
  for (uint32_t i = 0; i < c.engines_per_node; ++i) {
    const uint32_t e = node * c.engines_per_node + i;
    const bool fixed = p_.view->is_prefill_node(node) ? reserved_.count(e) > 0 : p_.view->model_traffic_bytes() > 0;
    if (io.hbm(e).allocations() > (fixed ? 1u : 0u)) return false;
  }
  return true;
}

void role_switcher::switch_role(drain& d) {
  const uint32_t node = d.move.node;
  auto& view = *p_.view;
  const auto& c = view.config;
  const bool to_prefill = d.move.to_prefill;
  d.move.drained_s = seconds(now_ns());
  node_actors& old = (*p_.nodes)[node];
  // Peers stop naming the node as a decode all-to-all peer; then its actors stop, and only once every one
  // of them is down (a compute worker may still be inside a kernel) is its HBM laid out again.
  view.set_role(node, actors::node_role::switching);
  std::vector<caf::actor> stopping = old.engines;
  stopping.insert(stopping.end(), old.workers.begin(), old.workers.end());
  stopping.push_back(caf::actor_cast<caf::actor>(old.leader));
  caf::scoped_actor waiter{*p_.sys};
  for (auto& a : stopping) {
    waiter->monitor(a);
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
  size_t down = 0;
  bool late = false;
  while (down < stopping.size() && !late)
    waiter->receive([&](const caf::down_msg&) { ++down; }, caf::after(waits_of(c).request()) >> [&] { late = true; });
  if (late)
    spdlog::warn("launcher: node {}: {} of its actors did not stop within {:g} s", node, stopping.size() - down,
                 c.timeout_s);
  auto& io = *(*p_.ios)[node];
  for (uint32_t i = 0; i < c.engines_per_node; ++i) {
    const uint32_t e = node * c.engines_per_node + i;
    // A decode engine takes its all-to-all buffer at offset 0 itself; a prefill engine keeps that front
    // unused, since a decode peer's write planned before the switch may still land there.
    const uint64_t front = to_prefill ? view.model_traffic_bytes() : 0;
    io.relayout_hbm(e, uint64_t((to_prefill ? c.prefill_hbm() : c.hbm_gb) * 1e9), front);
    if (front) reserved_.insert(e);
    else reserved_.erase(e);
  }
  view.set_role(node, to_prefill ? actors::node_role::prefill : actors::node_role::decode);
  node_actors fresh;
  fresh.traffic_queue = old.traffic_queue;
  spawn_node_engines(*p_.sys, *p_.base, p_.view, io, node, fresh, old.backends);
  p_.all->insert(p_.all->end(), fresh.all.begin(), fresh.all.end());
  view.set_node({node, caf::actor_cast<caf::actor>(fresh.traffic_queue), caf::actor_cast<caf::actor>(fresh.leader),
                 caf::actor{}, fresh.engines});
  caf::anon_send(fresh.leader, atom::tick_v);
  old = std::move(fresh);
}

// The scheduler takes the node back: its leader's next report brings its engines in, in their role now.
void role_switcher::give_back(caf::scoped_actor& self, uint32_t node) {
  self->request(p_.view->scheduler, waits_of(p_.view->config).request(), atom::rejoin_v, node)
      .receive([](uint32_t) {},
               [&](caf::error& e) { spdlog::warn("launcher: node {} not taken back: {}", node, describe(e)); });
}

}  // namespace dualpath::cluster
