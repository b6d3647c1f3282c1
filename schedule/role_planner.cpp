// Adaptive P/D's decision rule (docs/design.md §7.9).
#include "schedule/role_planner.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dualpath::schedule {

const char* to_string(role_move m) {
  switch (m) {
    case role_move::none: return "none";
    case role_move::to_prefill: return "to_prefill";
    case role_move::to_decode: return "to_decode";
  }
  return "?";
}

double prefill_pressure(const role_load& l) {
  const double capacity = double(l.prefill_nodes) * l.engines_per_node * l.window_s;
  if (capacity <= 0) return 0;
  // A pass is counted in the window it starts, so a long one can read above the window: busy is at most all.
  return std::min(1.0, l.prefill_busy_s / capacity) + l.prefill_backlog_s / capacity;
}

double decode_pressure(const role_load& l, double tpot_slo_s) {
  const double tpot = tpot_slo_s > 0 ? l.tpot_s / tpot_slo_s : 0;
  return std::max({l.decode_hbm, l.decode_slots, tpot}) + l.decode_waiting;
}

role_plan plan_roles(const role_load& l, const planner_params& p) {
  const double pp = prefill_pressure(l);
  const double dp = decode_pressure(l, p.tpot_slo_s);
  const uint32_t np = l.prefill_nodes, nd = l.decode_nodes;
  // The pressure of `to` nodes doing what `from` did.
  auto spread = [](double pressure, uint32_t from, uint32_t to) {
    return to ? pressure * double(from) / double(to) : 1e9;
  };
  // Each further node moves while the giving role keeps its minimum and stays under `low` without it, and the
  // receiving role still needs it (at or above `high` with the nodes before it). Nodes more for prefill also
  // send decode more turns per second, in proportion (Little's law: decode holds turns arriving faster for as
  // long).
  // One move at most grows the receiving role by max_growth times its nodes (at least one node).
  auto most = [&](uint32_t receiving) { return std::max(1u, uint32_t(p.max_growth * double(receiving))); };
  role_plan plan;
  if (pp >= p.high && dp < p.high && np > 0) {
    const uint32_t cap = most(np);
    uint32_t k = 0;
    while (k < cap && nd - k > p.min_nodes && spread(dp, nd, nd - k - 1) * double(np + k + 1) / double(np) < p.low &&
           spread(pp, np, np + k) >= p.high)
      ++k;
    if (k) plan = {role_move::to_prefill, k};
  } else if (dp >= p.high && pp < p.high && nd > 0) {
    const uint32_t cap = most(nd);
    uint32_t k = 0;
    while (k < cap && np - k > p.min_nodes && spread(pp, np, np - k - 1) < p.low && spread(dp, nd, nd + k) >= p.high)
      ++k;
    if (k) plan = {role_move::to_decode, k};
  }
  return plan;
}

role_plan role_driver::step(double now_s, const role_load& l, uint64_t done, uint64_t in_flight) {
  if (done < in_flight || moving_ > 0 || now_s < cooldown_until_) return {};
  const role_plan plan = plan_roles(l, params_);
  sustained_ = plan.move == last_ ? sustained_ + 1 : 1;
  last_ = plan.move;
  if (plan.move == role_move::none || sustained_ < sustain_) return {};
  sustained_ = 0;
  return plan;
}

void role_driver::switched(double now_s) {
  if (moving_ > 0 && --moving_ == 0) cooldown_until_ = now_s + cooldown_s_;
}

std::string describe(const role_load& l, const planner_params& p) {
  const double cap = double(std::max(1u, l.prefill_nodes)) * l.engines_per_node * l.window_s;
  return fmt::format(
      "{}P{}D: prefill {:.2f} (busy {:.2f}, backlog {:.2f}), decode {:.2f} (hbm {:.2f}, slots {:.2f}, "
      "waiting {:.2f}, tpot {:.1f} ms)",
      l.prefill_nodes, l.decode_nodes, prefill_pressure(l), l.prefill_busy_s / cap, l.prefill_backlog_s / cap,
      decode_pressure(l, p.tpot_slo_s), l.decode_hbm, l.decode_slots, l.decode_waiting, l.tpot_s * 1e3);
}

}  // namespace dualpath::schedule
