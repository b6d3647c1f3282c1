// docs/design.md §7.2–§7.5, one function per rule.
#include "schedule/selection.hpp"

#include <cmath>
#include <algorithm>
#include <limits>

namespace dualpath::schedule {

prefill_choice select_prefill(const std::vector<node_snapshot*>& group, const policy_params& params) {
  prefill_choice c2, c3;
  const uint64_t alpha = params.alpha_bytes();
  for (auto* node : group) {
    prefill_choice& cls = node->read_q <= alpha ? c2 : c3;
    for (auto& e : node->engines) {
      if (e.tok > params.beta_tokens) continue;  // C1: overloaded
      if (!cls.engine || e.tok < cls.engine->tok) cls = {node, &e};
    }
  }
  return c2.engine ? c2 : c3;
}

uint64_t max_free_hbm(const node_snapshot& group) {
  uint64_t best = 0;
  for (const auto& e : group.engines) best = std::max(best, e.free_hbm);
  return best;
}

int select_decode_group(const std::vector<uint64_t>& totals, const std::vector<uint64_t>& max_free,
                        const request_info& r) {
  int best = -1;
  for (size_t i = 0; i < totals.size(); ++i) {
    if (max_free[i] < r.kv_bytes) continue;  // no engine of the group can hold it
    if (best < 0 || totals[i] < totals[size_t(best)]) best = int(i);
  }
  return best;
}

int select_decode_group(const std::vector<node_snapshot*>& groups, const std::vector<uint64_t>& totals,
                        const request_info& r) {
  std::vector<uint64_t> max_free;
  max_free.reserve(groups.size());
  for (const auto* g : groups) max_free.push_back(max_free_hbm(*g));
  return select_decode_group(totals, max_free, r);
}

uint64_t max_free_hbm(const std::vector<node_snapshot*>& group) {
  uint64_t best = 0;
  for (const auto* n : group) best = std::max(best, max_free_hbm(*n));
  return best;
}

uint64_t total_tok(const std::vector<node_snapshot*>& group) {
  uint64_t sum = 0;
  for (const auto* n : group) sum += n->total_tok();
  return sum;
}

namespace {

// §7.3 level 2 over the engines of `count` nodes, taken as one group.
double threshold(node_snapshot* const* nodes, size_t count, const std::vector<const request_info*>& queue,
                 double z_slack) {
  uint64_t free_hbm = 0, tok = 0;
  size_t engines = 0;
  for (size_t n = 0; n < count; ++n)
    for (const auto& e : nodes[n]->engines) {
      free_hbm += e.free_hbm;
      tok += e.tok;
      ++engines;
    }
  if (engines == 0) return 0;
  uint64_t used = 0, len = 0;
  for (const auto* r : queue) {
    if (used + r->kv_bytes > free_hbm) break;  // R ends at the first request that no longer fits
    used += r->kv_bytes;
    len += r->len;
  }
  return z_slack * double(len + tok) / double(engines);
}

std::vector<int> place(node_snapshot* const* nodes, size_t count, const std::vector<const request_info*>& queue,
                       double z_slack) {
  std::vector<int> placed(queue.size(), -1);
  const double z = threshold(nodes, count, queue, z_slack);
  for (size_t q = 0; q < queue.size(); ++q) {
    const request_info& r = *queue[q];
    int under = -1, other = -1, index = 0;
    engine_snapshot *under_e = nullptr, *other_e = nullptr;
    for (size_t n = 0; n < count; ++n)
      for (auto& e : nodes[n]->engines) {
        const int i = index++;
        if (e.free_hbm < r.kv_bytes) continue;
        if (double(e.tok + r.len) <= z) {
          if (!under_e || e.seq < under_e->seq) under = i, under_e = &e;
        } else if (!other_e || e.tok < other_e->tok) {
          other = i, other_e = &e;
        }
      }
    engine_snapshot* e = under_e ? under_e : other_e;
    if (!e) break;  // no engine has HBM for this request: stop, keep the order
    e->seq += 1;
    e->tok += r.len;
    e->free_hbm -= r.kv_bytes;
    placed[q] = under_e ? under : other;
  }
  return placed;
}

}  // namespace

double decode_threshold(const node_snapshot& group, const std::vector<const request_info*>& queue, double z_slack) {
  node_snapshot* one = const_cast<node_snapshot*>(&group);  // read only
  return threshold(&one, 1, queue, z_slack);
}

double decode_threshold(const std::vector<node_snapshot*>& group, const std::vector<const request_info*>& queue,
                        double z_slack) {
  return threshold(group.data(), group.size(), queue, z_slack);
}

std::vector<int> place_in_decode_group(node_snapshot& group, const std::vector<const request_info*>& queue,
                                       double z_slack) {
  node_snapshot* one = &group;
  return place(&one, 1, queue, z_slack);
}

std::vector<int> place_in_decode_group(const std::vector<node_snapshot*>& group,
                                       const std::vector<const request_info*>& queue, double z_slack) {
  return place(group.data(), group.size(), queue, z_slack);
}

engine_ref engine_at(const std::vector<node_snapshot*>& group, int index) {
  for (auto* n : group) {
    if (index < int(n->engines.size())) return {n, &n->engines[size_t(index)]};
    index -= int(n->engines.size());
  }
  return {};
}

read_path shorter_read_q(const node_snapshot& pe, const node_snapshot& de) {
  return de.read_q < pe.read_q ? read_path::de : read_path::pe;
}

uint32_t split_pe_blocks(const request_info& r, uint64_t pe_read_q, uint64_t de_read_q) {
  if (r.hit_blocks == 0 || r.hit_bytes == 0) return 0;
  // Equal finish time: pe_read_q + x = de_read_q + (hit_bytes - x).
  const double h = double(r.hit_bytes);
  double x = (h + double(de_read_q) - double(pe_read_q)) / 2.0;
  if (x < 0) x = 0;
  if (x > h) x = h;
  return uint32_t(std::llround(double(r.hit_blocks) * x / h));
}

uint64_t pe_read_bytes(const assignment& a) {
  const auto& r = a.request;
  if (r.hit_blocks == 0) return a.path == read_path::de ? 0 : r.hit_bytes;
  return r.hit_bytes * a.pe_blocks / r.hit_blocks;
}

void charge_reads(const assignment& a, node_snapshot& pe, node_snapshot& de) {
  const uint64_t via_pe = pe_read_bytes(a);
  pe.read_q += via_pe;
  de.read_q += a.request.hit_bytes - via_pe;
}

}  // namespace dualpath::schedule
