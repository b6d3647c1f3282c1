#pragma once
// What every policy shares (docs/design.md §7): the fetching PE group, an assignment's engines and read path.
// Policies derive from group_policy and choose engines and paths for the group that fetches.
#include <deque>
#include <memory>
#include <vector>

#include "schedule/policy.hpp"

namespace dualpath::schedule {

assignment make_assignment(const request_info& r, const node_snapshot& pe_node, uint32_t pe,
                           const node_snapshot& de_node, uint32_t de);

// The prefill group that fetches, when it can take work: the known prefill nodes with engines of the
// fetching node's group (group_layout; one node by default), and requests waiting. The fetching node itself
// must be known: a leader fetches only after its first report. Empty otherwise.
void fetching_group(cluster_snapshot& snap, uint32_t node, const std::deque<request_info>& waiting,
                    const group_layout& layout, std::vector<node_snapshot*>& group);

// The whole hit through one node's SNIC (pe or de).
void set_path(assignment& a, read_path p);
// The hit divided between the PE and DE nodes' SNICs so both queues drain together (§7.5,
// split_pe_blocks); pe or de when one of them takes it all.
void set_split(assignment& a, const node_snapshot& pe, const node_snapshot& de);

// Every policy starts the same way: the PE group that fetches, when it can take work; the rest is its own.
class group_policy : public policy {
 public:
  std::vector<assignment> assign(cluster_snapshot& snap, uint32_t pe_node_id, std::deque<request_info>& waiting,
                                 const policy_params& params) final {
    fetching_group(snap, pe_node_id, waiting, params.groups, group_);
    if (group_.empty()) return {};
    return assign_group(snap, group_, waiting, params);
  }

 protected:
  virtual std::vector<assignment> assign_group(cluster_snapshot& snap, const std::vector<node_snapshot*>& pe_group,
                                               std::deque<request_info>& waiting, const policy_params& params) = 0;

 private:
  std::vector<node_snapshot*> group_;  // reused between calls
};

// The policy beyond the paper (queue_aware.cpp).
std::unique_ptr<policy> make_queue_aware_policy();

}  // namespace dualpath::schedule
