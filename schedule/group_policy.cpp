// docs/design.md §7: the steps every policy shares.
#include "schedule/group_policy.hpp"

#include <algorithm>

#include "schedule/selection.hpp"

namespace dualpath::schedule {

assignment make_assignment(const request_info& r, const node_snapshot& pe_node, uint32_t pe,
                           const node_snapshot& de_node, uint32_t de) {
  assignment a;
  a.request = r;
  a.pe = pe;
  a.pe_node = pe_node.node;
  a.de = de;
  a.de_node = de_node.node;
  return a;
}

void fetching_group(cluster_snapshot& snap, uint32_t node, const std::deque<request_info>& waiting,
                    const group_layout& layout, std::vector<node_snapshot*>& group) {
  group.clear();
  const node_snapshot* self = snap.find(node);
  if (!self || self->kind != role::prefill || waiting.empty()) return;
  const uint32_t first = layout.pe_group_first(node);
  for (uint32_t id = first; id < first + std::max(layout.pe_group_nodes, 1u); ++id) {
    node_snapshot* n = snap.find(id);
    if (n && n->kind == role::prefill && !n->engines.empty()) group.push_back(n);
  }
}

void set_path(assignment& a, read_path p) {
  a.path = p;
  a.pe_blocks = p == read_path::pe ? a.request.hit_blocks : 0;
}

void set_split(assignment& a, const node_snapshot& pe, const node_snapshot& de) {
  const uint32_t n = split_pe_blocks(a.request, pe.read_q, de.read_q);
  a.pe_blocks = n;
  a.path = n == a.request.hit_blocks ? read_path::pe : n == 0 ? read_path::de : read_path::split;
}

}  // namespace dualpath::schedule
