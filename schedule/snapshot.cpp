// cluster_snapshot bookkeeping: nodes sorted by id so lookups stay O(log nodes) at 1152 engines.
#include <algorithm>

#include "core/names.hpp"
#include "schedule/policy.hpp"

namespace dualpath::schedule {

request_info make_request_info(uint64_t id, uint64_t prompt_tokens, uint32_t gen, uint32_t hit_blocks,
                               const kv_geometry& g) {
  request_info info;
  info.id = id;
  info.hit_blocks = hit_blocks;
  info.hit_tokens = uint64_t(hit_blocks) * g.block_tokens;
  info.append_tokens = prompt_tokens - info.hit_tokens;
  info.hit_bytes = uint64_t(hit_blocks) * g.block_bytes();
  info.len = prompt_tokens + gen;
  info.kv_bytes = uint64_t(g.blocks_for(info.len)) * g.block_bytes();
  return info;
}

uint64_t node_snapshot::total_tok() const {
  uint64_t sum = 0;
  for (const auto& e : engines) sum += e.tok;
  return sum;
}

namespace {
template <class Nodes>
auto lower(Nodes& nodes, uint32_t node) {
  return std::lower_bound(nodes.begin(), nodes.end(), node,
                          [](const node_snapshot& n, uint32_t id) { return n.node < id; });
}
}  // namespace

node_snapshot* cluster_snapshot::find(uint32_t node) {
  auto it = lower(nodes, node);
  return it != nodes.end() && it->node == node ? &*it : nullptr;
}

const node_snapshot* cluster_snapshot::find(uint32_t node) const {
  auto it = lower(nodes, node);
  return it != nodes.end() && it->node == node ? &*it : nullptr;
}

node_snapshot& cluster_snapshot::upsert(uint32_t node, role kind) {
  auto it = lower(nodes, node);
  if (it != nodes.end() && it->node == node) return *it;
  node_snapshot fresh;
  fresh.node = node;
  fresh.kind = kind;
  return *nodes.insert(it, std::move(fresh));
}

void cluster_snapshot::erase(uint32_t node) {
  auto it = lower(nodes, node);
  if (it != nodes.end() && it->node == node) nodes.erase(it);
}

size_t cluster_snapshot::engine_count(role kind) const {
  size_t count = 0;
  for (const auto& n : nodes)
    if (n.kind == kind) count += n.engines.size();
  return count;
}

const char* to_string(read_path p) {
  return name_of(p, {{read_path::pe, "pe"}, {read_path::de, "de"}, {read_path::split, "split"}});
}

}  // namespace dualpath::schedule
