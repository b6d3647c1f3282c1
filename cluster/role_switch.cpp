// Adaptive P/D in the runtime (cluster/role_switch.hpp, docs/design.md §7.9).
#include "cluster/role_switch.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "actors/engines.hpp"
#include "cluster/node_processes.hpp"
#include "cluster/node_role.hpp"
#include "core/progress.hpp"
#include "protocol/errors.hpp"
#include "protocol/scheduler_codec.hpp"
#include "protocol/waits.hpp"

namespace dualpath::cluster {

namespace {

class embedded_hosts final : public role_hosts {
 public:
  embedded_hosts(caf::actor_system& sys, const run_base& base, cluster_view_ptr view,
                 std::vector<std::unique_ptr<runtime::node_io>>& ios, std::vector<node_actors>& nodes,
                 std::vector<caf::actor>& all)
      : sys_(sys), base_(base), view_(std::move(view)), ios_(ios), nodes_(nodes), all_(all) {}

  uint64_t prefill_busy_ns() override { return progress::prefill_busy_ns().load(std::memory_order_relaxed); }
  bool holds_nothing(caf::scoped_actor& self, uint32_t node) override {
    return node_holds_nothing(self, *view_, *ios_[node], node, moved_);
  }
  status switch_role(uint32_t node, bool to_prefill) override {
    switch_node_role(sys_, base_, view_, *ios_[node], node, to_prefill, nodes_[node], all_, moved_);
    return {};
  }

 private:
  caf::actor_system& sys_;
  const run_base& base_;
  cluster_view_ptr view_;
  std::vector<std::unique_ptr<runtime::node_io>>& ios_;
  std::vector<node_actors>& nodes_;
  std::vector<caf::actor>& all_;
  moved_engines moved_;
};

class process_hosts final : public role_hosts {
 public:
  process_hosts(node_processes& nodes, cluster_view_ptr view) : nodes_(nodes), view_(std::move(view)) {}

  // The node processes' own counts, summed (the last sum when one does not answer).
  uint64_t prefill_busy_ns() override {
    if (auto counters = nodes_.buffers()) {
      uint64_t sum = 0;
      for (const auto& c : *counters) sum += c.prefill_busy_ns;
      // A node lost and joined again counts from zero: the sum never goes back.
      busy_ = std::max(busy_, sum);
    }
    return busy_;
  }
  bool holds_nothing(caf::scoped_actor&, uint32_t node) override { return nodes_.holds_nothing(node); }
  status switch_role(uint32_t node, bool to_prefill) override {
    auto h = nodes_.switch_role(node, to_prefill);
    if (!h) return h.error();
    view_->set_role(node, serving_role(to_prefill));
    return {};
  }

 private:
  node_processes& nodes_;
  cluster_view_ptr view_;
  uint64_t busy_ = 0;
};

}  // namespace

std::unique_ptr<role_hosts> embedded_role_hosts(caf::actor_system& sys, const run_base& base, cluster_view_ptr view,
                                                std::vector<std::unique_ptr<runtime::node_io>>& ios,
                                                std::vector<node_actors>& nodes, std::vector<caf::actor>& all) {
  return std::make_unique<embedded_hosts>(sys, base, std::move(view), ios, nodes, all);
}

std::unique_ptr<role_hosts> process_role_hosts(node_processes& nodes, cluster_view_ptr view) {
  return std::make_unique<process_hosts>(nodes, std::move(view));
}

role_switcher::role_switcher(role_switch_parts parts)
    : p_(std::move(parts)),
      driver_({p_.view->config.planner_high, p_.view->config.planner_low, p_.view->config.planner_tpot_slo_s, 1},
              p_.view->config.planner_sustain, p_.view->config.planner_cooldown_s) {}

void role_switcher::begin(int64_t t0_ns) {
  t0_ = t0_ns;
  window_start_s_ = 0;
  busy_at_window_ = p_.hosts->prefill_busy_ns();
}

uint32_t role_switcher::prefill_nodes() const {
  uint32_t n = 0;
  for (uint32_t node = 0; node < p_.view->nodes(); ++node) n += p_.view->is_prefill_node(node) ? 1 : 0;
  return n;
}

void role_switcher::tick(caf::scoped_actor& self, const std::vector<report::turn_record>& records) {
  for (size_t k = 0; k < draining_.size();) {
    drain& d = draining_[k];
    const bool quiet = d.pending.empty() && p_.hosts->holds_nothing(self, d.move.node);
    // Two quiet checks in a row: a message already on its way to the node (an assignment fetched just before
    // the drain) has arrived by the second.
    if (quiet && d.quiet) {
      const bool switched = switch_role(d);
      give_back(self, d.move.node);
      if (!switched) {
        driver_.switched(seconds(now_ns()));
        draining_.erase(draining_.begin() + long(k));
        continue;
      }
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
  const uint64_t busy = p_.hosts->prefill_busy_ns();
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
  // The scheduler hears a turn is done after its client does: one it still counts may be answered already.
  for (uint64_t t : *turns)
    if (!answered_.count(t)) d.pending.insert(t);
  draining_.push_back(std::move(d));
  driver_.started(1);
}

void role_switcher::on_result(uint64_t request) {
  for (auto& d : draining_) d.pending.erase(request);
  answered_.insert(request);
  answered_order_.push_back(request);
  // Only the latest matter: a drain's list is at most a few reports old.
  if (answered_order_.size() > max_answered) {
    answered_.erase(answered_order_.front());
    answered_order_.pop_front();
  }
}

bool role_switcher::switch_role(drain& d) {
  d.move.drained_s = seconds(now_ns());
  if (auto s = p_.hosts->switch_role(d.move.node, d.move.to_prefill); !s) {
    spdlog::warn("launcher: node {} did not change role: {}", d.move.node, s.message());
    return false;
  }
  return true;
}

// The scheduler takes the node back: its leader's next report brings its engines in, in their role now.
void role_switcher::give_back(caf::scoped_actor& self, uint32_t node) {
  self->request(p_.view->scheduler, waits_of(p_.view->config).request(), atom::rejoin_v, node)
      .receive([](uint32_t) {},
               [&](caf::error& e) { spdlog::warn("launcher: node {} not taken back: {}", node, describe(e)); });
}

}  // namespace dualpath::cluster
