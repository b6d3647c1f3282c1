#pragma once
// Small builders for hand-made cluster snapshots.
#include <initializer_list>
#include <utility>
#include <vector>

#include "schedule/policy.hpp"

namespace dualpath::schedule::test {

// Adds node `node` with one engine per entry of `toks` (engine ids node*100 + i).
inline node_snapshot& add_node(cluster_snapshot& snap, uint32_t node, role kind, uint64_t read_q,
                               std::initializer_list<uint64_t> toks, uint64_t free_hbm = 1u << 30) {
  auto& n = snap.upsert(node, kind);
  n.read_q = read_q;
  uint32_t i = 0;
  for (uint64_t tok : toks) n.engines.push_back({node * 100 + i++, node, 0, tok, free_hbm});
  return n;
}

inline request_info make_request(uint64_t id, uint64_t append = 100, uint64_t len = 1000, uint64_t kv_bytes = 1000,
                                 uint32_t hit_blocks = 10, uint64_t hit_bytes = 10000) {
  request_info r;
  r.id = id;
  r.append_tokens = append;
  r.hit_tokens = len - append;
  r.len = len;
  r.kv_bytes = kv_bytes;
  r.hit_blocks = hit_blocks;
  r.hit_bytes = hit_bytes;
  return r;
}

// The (PE, DE) engines of each assignment, in order: what a fetch chose, compared whole.
inline std::vector<std::pair<uint32_t, uint32_t>> engine_pairs(const std::vector<assignment>& out) {
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (const auto& a : out) pairs.emplace_back(a.pe, a.de);
  return pairs;
}
using engine_pair_list = std::vector<std::pair<uint32_t, uint32_t>>;

// α and β in tokens, 10 KV bytes per token (so α = 10·alpha bytes of read_q).
inline policy_params thresholds(uint64_t alpha, uint64_t beta) {
  policy_params p;
  p.alpha_tokens = alpha;
  p.beta_tokens = beta;
  p.kv_bytes_per_token = 10;
  return p;
}

// α and β so high that neither limits a fetch (1 KV byte per token).
inline policy_params loose() {
  policy_params p;
  p.alpha_tokens = 1u << 20;
  p.beta_tokens = 1u << 20;
  return p;
}

}  // namespace dualpath::schedule::test
