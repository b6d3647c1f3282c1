// docs/design.md §7.1: a report replaces the measured numbers and re-applies the charges it does not yet
// acknowledge, so nothing the policy charged is forgotten and nothing is counted twice.
#include "schedule/fresh_view.hpp"

#include <algorithm>

#include "schedule/selection.hpp"

namespace dualpath::schedule {

namespace {

std::vector<uint64_t> sorted(std::vector<uint64_t> ids) {
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

void fresh_view::record(const std::vector<assignment>& out, double now_s) {
  expire(now_s);
  for (const auto& a : out) {
    const auto& r = a.request;
    pending_request p;
    p.at_s = now_s;
    // Exactly what the policies charge (policies.cpp, selection.cpp charge_reads).
    p.charges.push_back({a.pe_node, a.pe, 1, r.append_tokens, 0, 0});
    p.charges.push_back({a.de_node, a.de, 1, r.len, r.kv_bytes, 0});
    const uint64_t via_pe = pe_read_bytes(a);
    if (via_pe > 0) p.charges.push_back({a.pe_node, no_engine, 0, 0, 0, via_pe});
    if (r.hit_bytes > via_pe) p.charges.push_back({a.de_node, no_engine, 0, 0, 0, r.hit_bytes - via_pe});
    add(r.id, std::move(p));
  }
}

void fresh_view::add(uint64_t id, pending_request p) {
  drop(id);  // an id assigned again replaces its old charges rather than adding to them
  for (const auto& c : p.charges) {
    auto& ids = by_node_[c.node];
    if (ids.empty() || ids.back() != id) ids.push_back(id);
  }
  live_ += p.charges.size();
  order_.emplace_back(p.at_s, id);
  pending_[id] = std::move(p);
}

void fresh_view::drop(uint64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  live_ -= it->second.charges.size();
  pending_.erase(it);
}

void fresh_view::expire(double now_s) {
  while (!order_.empty() && order_.front().first + expiry_s_ < now_s) {
    const auto [at, id] = order_.front();
    order_.pop_front();
    auto it = pending_.find(id);
    // A mismatching time: the id was assigned again later, and that entry is still young.
    if (it == pending_.end() || it->second.at_s != at) continue;
    expired_ += it->second.charges.size();
    drop(id);
  }
}

size_t fresh_view::remove_node(uint32_t node) {
  lost_.insert(node);
  auto& nodes = snap_.nodes;
  nodes.erase(std::remove_if(nodes.begin(), nodes.end(), [&](const node_snapshot& n) { return n.node == node; }),
              nodes.end());
  size_t dropped = 0;
  if (auto it = by_node_.find(node); it != by_node_.end()) {
    for (uint64_t id : it->second)
      if (pending_.count(id)) drop(id), ++dropped;
    by_node_.erase(it);
  }
  return dropped;
}

void fresh_view::report(const group_report& r, double now_s) {
  expire(now_s);
  const uint32_t node_id = r.node.node;
  if (lost(node_id)) return;  // a late report of a lost node must not bring its engines back
  node_snapshot& n = snap_.upsert(node_id, r.node.kind);
  n.read_q = r.node.read_q;
  n.engines = r.node.engines;

  auto it = by_node_.find(node_id);
  if (it == by_node_.end()) return;
  std::vector<std::vector<uint64_t>> acked;
  for (const auto& ids : r.acked) acked.push_back(sorted(ids));
  const std::vector<uint64_t> reads = sorted(r.read_acked);
  auto engine_acked = [&](uint32_t engine, uint64_t id) {
    for (size_t i = 0; i < n.engines.size() && i < acked.size(); ++i)
      if (n.engines[i].engine == engine) return std::binary_search(acked[i].begin(), acked[i].end(), id);
    return false;
  };
  auto apply = [&](const charge& c) {
    if (c.engine == no_engine) {
      n.read_q += c.bytes;
      return;
    }
    for (auto& e : n.engines) {
      if (e.engine != c.engine) continue;
      e.seq += c.seq;
      e.tok += c.tok;
      e.free_hbm -= std::min(e.free_hbm, c.hbm);
      return;
    }
  };

  std::vector<uint64_t> ids = std::move(it->second);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<uint64_t> keep;
  for (uint64_t id : ids) {
    auto p = pending_.find(id);
    if (p == pending_.end()) continue;
    auto& cs = p->second.charges;
    const bool at_decode = r.node.kind == role::decode && std::any_of(cs.begin(), cs.end(), [&](const charge& c) {
                             return c.node == node_id && c.engine != no_engine && engine_acked(c.engine, id);
                           });
    if (at_decode) {
      drop(id);
      continue;
    }
    bool here = false;
    for (auto c = cs.begin(); c != cs.end();) {
      if (c->node != node_id) {
        ++c;
        continue;
      }
      const bool ack =
          c->engine == no_engine ? std::binary_search(reads.begin(), reads.end(), id) : engine_acked(c->engine, id);
      if (ack) {
        c = cs.erase(c);
        --live_;
        continue;
      }
      apply(*c);
      here = true;
      ++c;
    }
    if (cs.empty()) pending_.erase(p);
    else if (here) keep.push_back(id);
  }
  it->second = std::move(keep);
}

}  // namespace dualpath::schedule
