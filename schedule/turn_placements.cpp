// docs/design.md §13: the turns in flight on a lost node, named for re-running.
#include "schedule/turn_placements.hpp"

#include <algorithm>

namespace dualpath::schedule {

std::vector<uint64_t> turn_placements::lose(uint32_t node) {
  std::vector<uint64_t> out;
  for (auto it = by_agent_.begin(); it != by_agent_.end();) {
    if (it->second.pe_node == node || it->second.de_node == node) {
      out.push_back(it->second.request);
      it = by_agent_.erase(it);
    } else {
      ++it;
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint64_t> turn_placements::decoding_on(uint32_t node) const {
  std::vector<uint64_t> out;
  for (const auto& [agent, p] : by_agent_)
    if (p.de_node == node) out.push_back(p.request);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint32_t> turn_placements::per_node(uint32_t nodes) const {
  std::vector<uint32_t> out(nodes, 0);
  for (const auto& [agent, p] : by_agent_) {
    if (p.pe_node < nodes) ++out[p.pe_node];
    if (p.de_node < nodes && p.de_node != p.pe_node) ++out[p.de_node];
  }
  return out;
}

}  // namespace dualpath::schedule
