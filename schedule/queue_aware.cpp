// The policy beyond the paper (docs/design.md §7.8, run policy `queue_aware`). The paper's rules choose a
// request's decode engine by token load alone and only then its read path, so the DE node whose SNIC would
// read soonest is rarely the one chosen, and a burst of requests placed on the least-loaded decode node
// queues its reads on that node's SNIC (or, the path rule seeing it backed up, on the PE node's) while other
// SNICs idle. Here the decode engine and the read are one choice: among decode engines with HBM for the
// request and a token load within Z (§7.3's bound over every decode engine), the one whose read ends soonest,
// then the least token load. The read is divided between the PE and DE nodes' SNICs so that both queues drain
// together (§7.5's split). A prefill group takes no more than its share of the outstanding prefill work, the
// waiting turns included (the offline tail, §7.8). First turns (no hits) go to busy engines in two waves, so
// the first passes of an offline start do not all end together (§7.8).
#include <algorithm>
#include <limits>

#include "schedule/group_policy.hpp"
#include "schedule/selection.hpp"

namespace dualpath::schedule {

namespace {

class queue_aware_policy final : public group_policy {
 public:
  std::string_view name() const override { return "balanced_rq"; }

 protected:
  std::vector<assignment> assign_group(cluster_snapshot& snap, const std::vector<node_snapshot*>& group,
                                       std::deque<request_info>& waiting, const policy_params& params) override {
    std::vector<assignment> out;
    decode_.clear();
    uint64_t tok = 0, engines = 0, pe_tok = 0, pe_engines = 0, group_tok = 0, group_engines = 0;
    for (auto& n : snap.nodes) {
      const bool decode = n.kind == role::decode;
      if (decode && !n.engines.empty()) decode_.push_back(&n);
      for (const auto& e : n.engines) (decode ? tok : pe_tok) += e.tok, ++(decode ? engines : pe_engines);
    }
    if (decode_.empty()) return out;
    for (const auto* n : group)
      for (const auto& e : n->engines) group_tok += e.tok, ++group_engines;
    // The outstanding prefill work: what the prefill engines hold and what waits. Taking a request moves its
    // tokens from one to the other, so the total, and the share below, stay as they are for the whole call.
    // One walk of the queue gives both the waiting work and the part of it that is first turns (no hits).
    uint64_t outstanding = pe_tok, first_tok = 0;
    for (const auto& w : waiting) {
      outstanding += w.append_tokens;
      if (w.hit_blocks == 0) first_tok += w.append_tokens;
    }
    const double share = params.z_slack * double(outstanding) / double(pe_engines);
    const double wave = first_wave(first_tok, pe_tok, pe_engines);
    while (!waiting.empty()) {
      const request_info& r = waiting.front();
      const prefill_choice pe = select_prefill(group, params);
      if (!pe.engine) break;
      // The group's share: it takes a request while its engines' mean load stays within z_slack × the mean
      // of all outstanding work over every prefill engine, or while one of them is idle. β alone let the group
      // that fetched first take the last turns of a run while other prefill nodes idled. A share of the
      // engines' load alone (without the waiting turns) let a busy group take only 5% over the mean per fetch,
      // so while turns queued, passes ran small and the queue waited for engines to go idle (§7.8).
      // Both limits bind a busy engine only: an idle one always takes the head.
      const bool busy = pe.engine->tok > 0;
      if (busy && double(group_tok + r.append_tokens) / double(group_engines) > share) break;
      if (busy && r.hit_blocks == 0 && double(pe.engine->tok + r.append_tokens) > wave) break;
      group_tok += r.append_tokens;
      const double z = params.z_slack * double(tok + r.len) / double(engines);
      const choice de = choose_decode(*pe.node, r, z);
      if (!de.engine) break;  // no decode engine has HBM for it: it stays at the head
      pe.engine->tok += r.append_tokens;
      pe.engine->seq += 1;
      de.engine->tok += r.len;
      de.engine->seq += 1;
      de.engine->free_hbm -= r.kv_bytes;
      tok += r.len;
      assignment a = make_assignment(r, *pe.node, pe.engine->engine, *de.node, de.engine->engine);
      // Divided so both queues drain together: when both are short, as at the end of an offline run, a
      // turn's read takes half as long as through one SNIC.
      set_split(a, *pe.node, *de.node);
      charge_reads(a, *pe.node, *de.node);
      out.push_back(a);
      waiting.pop_front();
    }
    return out;
  }

 private:
  struct choice {
    node_snapshot* node = nullptr;
    engine_snapshot* engine = nullptr;
    bool over_z = true;
    uint64_t read_end = 0;  // bytes queued ahead of its read's last byte, read divided over both SNICs
  };

  // Within Z before beyond it; then the read that ends soonest; then the smaller token load (and the
  // fewer requests, which keeps decode batches even).
  static bool better(const choice& a, const choice& b) {
    if (!b.engine) return true;
    if (a.over_z != b.over_z) return !a.over_z;
    if (a.read_end != b.read_end) return a.read_end < b.read_end;
    if (a.engine->tok != b.engine->tok) return a.engine->tok < b.engine->tok;
    return a.engine->seq < b.engine->seq;
  }

  // The load up to which a busy prefill engine takes first turns (no hits): half its share of the first turns
  // waiting (`first_tok`) and the prefill engines' load. At an offline start every agent's first turn arrives at
  // once; each engine taking its whole share ends its first pass with the others', and the decode engines and the
  // decode nodes' write-backs idle until then and take every first turn at once. In two waves the first decodes and
  // persists while the second computes (the arena's geomean 0.864 → 0.857 of round robin; docs/experiments.md).
  // With one prefill engine a wave only adds a pass, so the rule needs two or more (no limit: infinity).
  static double first_wave(uint64_t first_tok, uint64_t pe_tok, uint64_t pe_engines) {
    if (pe_engines < 2) return std::numeric_limits<double>::infinity();
    return double(first_tok + pe_tok) / (2.0 * double(pe_engines));
  }

  // When the request's read would end (bytes queued ahead of its last byte), divided as set_split divides it:
  // split_pe_blocks's equal-finish equation, here in bytes before its rounding to whole blocks. Taken from the
  // rounded division instead (the larger of the two SNICs' ends), the choice changed on 68 of the arena's 200
  // scenarios (seed 1) and queue_aware went from 95.5% to 93.5% as fast as `dualpath`: near a tie, a block
  // rounded one way or the other decides the node, where the bytes say the two reads end together.
  static uint64_t split_finish(uint64_t pe_q, uint64_t de_q, uint64_t bytes) {
    const uint64_t lo = std::min(pe_q, de_q), hi = std::max(pe_q, de_q);
    if (hi - lo >= bytes) return lo + bytes;
    return (pe_q + de_q + bytes) / 2;
  }

  choice choose_decode(const node_snapshot& pe, const request_info& r, double z) const {
    choice best;
    for (auto* n : decode_) {
      const uint64_t end = split_finish(pe.read_q, n->read_q, r.hit_bytes);
      for (auto& e : n->engines) {
        if (e.free_hbm < r.kv_bytes) continue;
        const choice c{n, &e, double(e.tok + r.len) > z, end};
        if (better(c, best)) best = c;
      }
    }
    return best;
  }

  std::vector<node_snapshot*> decode_;  // reused between calls
};

}  // namespace

std::unique_ptr<policy> make_queue_aware_policy() { return std::make_unique<queue_aware_policy>(); }

}  // namespace dualpath::schedule
