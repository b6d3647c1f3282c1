// Adaptive P/D in the simulator (docs/design.md §7.9). Every window the planner (schedule/role_planner) reads
// the loads of the nodes serving; when it calls for a move, the chosen node leaves the scheduler's view (no new
// work), finishes what it holds (passes, decodes, DRAM loads, write-back), pays the switch cost (its HBM and
// buffers laid out for the other role, its peers told) and joins the view in its new role.
#include <fmt/format.h>

#include <algorithm>

#include "sim/model.hpp"

namespace dualpath::sim {

void simulator::add_to_snapshot(uint32_t n) {
  const bool prefill = nodes_[n].prefill;
  auto& sn = snap_.upsert(n, prefill ? schedule::role::prefill : schedule::role::decode);
  sn.engines.clear();
  for (uint32_t i = 0; i < cfg_.engines_per_node; ++i) {
    schedule::engine_snapshot e;
    e.engine = n * cfg_.engines_per_node + i;
    e.node = n;
    e.free_hbm = prefill ? pes_[e.engine].hbm_free : des_[e.engine].hbm_free;
    sn.engines.push_back(e);
  }
}

schedule::role_load simulator::window_load() const {
  schedule::role_load l;
  l.engines_per_node = cfg_.engines_per_node;
  l.window_s = cfg_.planner_window_s;
  l.prefill_busy_s = window_busy_s_;
  // Work assigned to prefill engines and not yet computed, in seconds of one engine at β's rate (the mean
  // turn's prefill speed). A request still waiting for placement counts against decode when a prefill engine
  // sits idle: every policy gives an idle engine work, so what holds it back is decode HBM.
  const double tokens_per_s = double(params_.beta_tokens) / cfg_.beta_s;
  uint64_t backlog = 0;
  bool pe_idle = false;
  uint64_t hbm_used = 0, hbm_total = 0, active = 0, slots = 0, waiting = 0;
  for (uint32_t n = 0; n < nodes_.size(); ++n) {
    const auto& node = nodes_[n];
    if (node.phase != node_phase::serving) continue;
    (node.prefill ? l.prefill_nodes : l.decode_nodes) += 1;
    for (uint32_t i = 0; i < cfg_.engines_per_node; ++i) {
      const uint32_t e = n * cfg_.engines_per_node + i;
      if (node.prefill) {
        for (const auto& w : pes_[e].ready) backlog += w.remaining;
        pe_idle = pe_idle || (!pes_[e].busy && pes_[e].seq == 0);
        continue;
      }
      const auto& de = des_[e];
      hbm_used += hbm_bytes_ - de.hbm_free + std::min(de.hbm_free, de.promised_hbm);
      hbm_total += hbm_bytes_;
      active += de.active.size();
      slots += std::min<uint64_t>(de.active.size(), cfg_.max_decode_batch);
      waiting += de.waiting.size();
    }
  }
  l.prefill_backlog_s = tokens_per_s > 0 ? double(backlog) / tokens_per_s : 0;
  if (hbm_total) l.decode_hbm = double(hbm_used) / double(hbm_total);
  if (l.decode_nodes)
    l.decode_slots = double(slots) / (double(l.decode_nodes) * cfg_.engines_per_node * cfg_.max_decode_batch);
  if (pe_idle) waiting += waiting_.size();
  l.decode_waiting = double(waiting) / double(std::max<uint64_t>(1, active));
  if (window_tpot_n_) l.tpot_s = window_tpot_sum_ / double(window_tpot_n_);
  return l;
}

void simulator::plan() {
  const schedule::role_load l = window_load();
  window_busy_s_ = window_tpot_sum_ = 0;
  window_tpot_n_ = 0;
  // Ticks stop with the last turn, and when nothing but ticks is left (a stalled run must still end).
  if (agents_done_ >= agents_.size() || events_.size() <= ticks_pending_) return;
  push_tick(now_ + cfg_.planner_window_s, event_kind::plan);
  if (!driver_)
    driver_.emplace(schedule::planner_params{cfg_.planner_high, cfg_.planner_low, cfg_.planner_tpot_slo_s, 1},
                    cfg_.planner_sustain, cfg_.planner_cooldown_s);
  const uint64_t done = records_.size(), in_flight = submitted_ - done;
  const schedule::role_plan plan = driver_->step(now_, l, done, in_flight);
  if (plan.move == schedule::role_move::none) return;
  const schedule::planner_params& p = driver_->params();
  const bool to_prefill = plan.move == schedule::role_move::to_prefill;
  // The nodes of the giving role that hold the least: they drain soonest.
  std::vector<std::pair<uint64_t, uint32_t>> held;
  for (uint32_t n = 0; n < nodes_.size(); ++n) {
    if (nodes_[n].phase != node_phase::serving || nodes_[n].prefill == to_prefill) continue;
    uint64_t tok = 0;
    for (uint32_t i = 0; i < cfg_.engines_per_node; ++i) {
      const uint32_t e = n * cfg_.engines_per_node + i;
      tok += to_prefill ? des_[e].tok + des_[e].promised_tok : pes_[e].tok;
    }
    held.emplace_back(tok, n);
  }
  std::sort(held.begin(), held.end());
  const std::string why = schedule::describe(l, p);
  for (uint32_t k = 0; k < plan.nodes && k < held.size(); ++k) {
    const uint32_t n = held[k].second;
    driver_->started(1);
    nodes_[n].phase = node_phase::draining;
    nodes_[n].move = switches_.size();
    snap_.erase(n);
    draining_.push_back(n);
    switches_.push_back({n, to_prefill, now_, 0, 0, why});
  }
  check_drained();
}

bool simulator::drained(uint32_t n) const {
  const auto& node = nodes_[n];
  if (node.slots_free != node.slots || !node.slot_waiters.empty() || node.write_free_at > now_) return false;
  for (uint32_t i = 0; i < cfg_.engines_per_node; ++i) {
    const uint32_t e = n * cfg_.engines_per_node + i;
    if (node.prefill) {
      const auto& pe = pes_[e];
      if (pe.busy || pe.seq || !pe.ready.empty()) return false;
    } else {
      const auto& de = des_[e];
      if (de.seq || de.promised_seq || !de.active.empty() || !de.waiting.empty()) return false;
    }
  }
  return true;
}

// Called after every event while nodes drain: whatever freed a node's last work ran just now.
void simulator::check_drained() {
  for (size_t k = 0; k < draining_.size();) {
    const uint32_t n = draining_[k];
    if (!drained(n)) {
      ++k;
      continue;
    }
    draining_.erase(draining_.begin() + long(k));
    nodes_[n].phase = node_phase::switching;
    switches_[nodes_[n].move].drained_s = now_;
    events_.push(now_ + cfg_.planner_switch_s, event_kind::role_switched, n);
  }
}

void simulator::role_switched(uint32_t n) {
  auto& node = nodes_[n];
  node.prefill = !node.prefill;
  node.phase = node_phase::serving;
  reset_engines(n);
  add_to_snapshot(n);
  switches_[node.move].done_s = now_;
  driver_->switched(now_);  // the cooldown runs from the last node of a move
  want_round();
}

}  // namespace dualpath::sim
