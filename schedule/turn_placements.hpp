#pragma once
// Where each agent's turn in flight was placed, so that when a node is lost the scheduler can name the turns
// to re-run (docs/design.md §13). An agent has at most one turn in flight, so an agent's next submit (its
// next turn, or this turn re-run) supersedes its placement. Plain C++, no clocks.
#include <cstdint>
#include <optional>
#include <utility>
#include <unordered_map>
#include <vector>

#include "schedule/policy.hpp"

namespace dualpath::schedule {

class turn_placements {
 public:
  // The request of `agent` was assigned as `a` (replacing the agent's earlier placement).
  void placed(uint32_t agent, const assignment& a) {
    by_agent_[agent] = {a.request.id, a.pe_node, a.de_node, a.pe, a.de};
  }
  // `agent` submitted a request: whatever it had in flight has ended or is being re-run.
  void submitted(uint32_t agent) { by_agent_.erase(agent); }
  // Node `node` is lost: the requests placed with their PE or DE on it, forgotten here (sorted by id).
  std::vector<uint64_t> lose(uint32_t node);
  // The requests placed with their DE on `node`, kept here (sorted by id): a decode node that drains to change
  // role (docs/design.md §7.9) decodes them, though it may not have heard of them yet.
  std::vector<uint64_t> decoding_on(uint32_t node) const;
  size_t size() const { return by_agent_.size(); }
  // The PE and DE engine of `request` (of `agent`) while it is the agent's turn in flight.
  std::optional<std::pair<uint32_t, uint32_t>> engines_of(uint32_t agent, uint64_t request) const {
    const auto it = by_agent_.find(agent);
    if (it == by_agent_.end() || it->second.request != request) return std::nullopt;
    return std::make_pair(it->second.pe, it->second.de);
  }
  // Per node (0 .. nodes-1): the turns in flight with their PE or DE there (a turn counts on both its nodes).
  std::vector<uint32_t> per_node(uint32_t nodes) const;

 private:
  struct placement {
    uint64_t request = 0;
    uint32_t pe_node = 0, de_node = 0;
    uint32_t pe = 0, de = 0;  // engines
  };
  std::unordered_map<uint32_t, placement> by_agent_;
};

}  // namespace dualpath::schedule
