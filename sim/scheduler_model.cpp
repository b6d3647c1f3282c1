// The scheduler in the simulator (docs/design.md §7.1, §17): the real policy over a snapshot that is what
// the leaders' reports would say. Leaders report every 2 ms; a round refreshes the whole snapshot from the
// engines' own counters, as the reports would, then lets every prefill node fetch in turn. The fresh view
// (schedule/fresh_view) keeps a charge until the engine counts the request: a prefill engine and a node's
// read queue count it from assignment, so only a decode engine's charges outlive a report, until hand-off.
// The simulator keeps those as the engine's promised counters, which gives the fresh view's numbers in O(1).
#include <algorithm>
#include <cmath>

#include "sim/model.hpp"

namespace dualpath::sim {

namespace {
constexpr double report_period_s = 0.002;
}

// A round at the next report tick, when requests wait. Events that can let a waiting request be placed
// (an arrival, a prefill engine handing off, decode HBM freed) ask for one; between them nothing changes
// the outcome, so no round runs.
void simulator::want_round() {
  if (round_pending_ || waiting_.empty()) return;
  double t = std::ceil(now_ / report_period_s) * report_period_s;
  if (t <= now_) t += report_period_s;
  events_.push(t, event_kind::round, 0);
  round_pending_ = true;
}

void simulator::refresh_snapshot() {
  const uint32_t g = cfg_.engines_per_node;
  for (auto& n : snap_.nodes) {
    n.read_q = read_q(n.node);
    for (uint32_t i = 0; i < g; ++i) {
      auto& e = n.engines[i];
      if (nodes_[n.node].prefill) {
        const auto& pe = pes_[e.engine];
        e.seq = pe.seq, e.tok = pe.tok, e.free_hbm = pe.hbm_free;
      } else {
        const auto& de = de_of(e.engine);
        e.seq = de.seq, e.tok = de.tok, e.free_hbm = de.hbm_free;
        if (o_.fresh_view) {
          e.seq += de.promised_seq;
          e.tok += de.promised_tok;
          e.free_hbm -= std::min(e.free_hbm, de.promised_hbm);
        }
      }
    }
  }
}

void simulator::round() {
  round_pending_ = false;
  if (waiting_.empty()) return;
  ++counters_.rounds;
  refresh_snapshot();
  // The prefill nodes serving now (adaptive P/D changes them; a draining node is not in the snapshot).
  prefill_ids_.clear();
  for (const auto& n : snap_.nodes)
    if (n.kind == schedule::role::prefill) prefill_ids_.push_back(n.node);
  const uint32_t p = uint32_t(prefill_ids_.size());
  if (p == 0) return;
  uint64_t assigned = 0;
  for (uint32_t k = 0; k < p && !waiting_.empty(); ++k) {
    const uint32_t node = prefill_ids_[(round_start_ + k) % p];
    // Only a group's first node fetches, for every engine of the group; and every policy gives work only to
    // prefill engines at or under β: a group with none cannot take work.
    const auto& groups = params_.groups;
    if (!groups.fetches(node)) continue;
    bool open = false;
    for (uint32_t n = node; n < node + groups.pe_group_nodes && !open; ++n)
      if (const auto* sn = snap_.find(n); sn && sn->kind == schedule::role::prefill)
        for (const auto& e : sn->engines) open = open || e.tok <= params_.beta_tokens;
    if (!open) continue;
    for (const auto& a : policy_->assign(snap_, node, waiting_, params_)) {
      start(a);
      ++assigned;
    }
  }
  round_start_ = (round_start_ + 1) % p;
  counters_.decisions += assigned;
  // More may fit at the next tick (the runtime's leaders fetch every 2 ms); otherwise an event asks again.
  if (assigned) want_round();
}

// An assignment reaches its prefill engine: the loads (DRAM slots, then SNIC reads) start at once.
void simulator::start(const schedule::assignment& asg) {
  const uint32_t id = uint32_t(asg.request.id);
  agent_state& a = agents_[id];
  a.asg = asg;
  a.assigned = now_;
  auto& pe = pes_[asg.pe];
  pe.tok += asg.request.append_tokens;
  pe.seq += 1;
  auto& de = de_of(asg.de);
  de.promised_seq += 1;
  de.promised_tok += asg.request.len;
  de.promised_hbm += asg.request.kv_bytes;
  const uint32_t prompt_blocks = geo_.blocks_for(a.prompt);
  const uint32_t pe_blocks = std::min(asg.pe_blocks, a.hit);
  const uint32_t de_hits = a.hit - pe_blocks;
  uint32_t pe_blocks_slots = pe_blocks;
  for (auto [node, blocks] : {std::pair<uint32_t, uint32_t>{asg.pe_node, pe_blocks}, {asg.de_node, prompt_blocks}}) {
    if (blocks > nodes_[node].slots) {
      pe.tok -= asg.request.append_tokens;
      pe.seq -= 1;
      unpromise(id);
      fail(id, "turn needs " + std::to_string(blocks) + " DRAM buffer slots on node " + std::to_string(node) +
                   ", which has " + std::to_string(nodes_[node].slots) + " (hardware.dram_buffer_gb)");
      return;
    }
  }
  // The oracle's hit KV is already in memory: it takes no buffer slots and reads nothing.
  if (mode_.bypass()) pe_blocks_slots = 0;
  a.pending = pe_blocks_slots ? 2 : 1;
  if (pe_blocks_slots) take_slots(asg.pe_node, id, pe_blocks_slots, uint64_t(pe_blocks) * file_bytes_);
  // The DE node holds one slot per prompt block: the hits it reads itself, the rest arrive from the PE.
  take_slots(asg.de_node, id, prompt_blocks, uint64_t(de_hits) * file_bytes_);
}

void simulator::unpromise(uint32_t id) {
  const auto& asg = agents_[id].asg;
  auto& de = de_of(asg.de);
  de.promised_seq -= 1;
  de.promised_tok -= asg.request.len;
  de.promised_hbm -= asg.request.kv_bytes;
}

}  // namespace dualpath::sim
