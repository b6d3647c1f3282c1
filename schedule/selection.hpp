#pragma once
// The decision steps of docs/design.md §7.2–§7.5 as separate functions, so each rule is tested on its own and
// the policies (policies.cpp) are only their composition.
#include <vector>

#include "schedule/policy.hpp"

namespace dualpath::schedule {

struct prefill_choice {
  node_snapshot* node = nullptr;
  engine_snapshot* engine = nullptr;  // nullptr: every engine of the group is overloaded (C1)
};

// §7.2 for one request: C1 = engines with tok_e > β get nothing; C2 = the rest on nodes with
// read_q ≤ α, C3 = the rest on nodes above α. Smallest tok_e in C2, else in C3. `group` is the fetching
// PE group: one node, or several (group_layout), whose read_q then differ. Does not update the snapshot.
prefill_choice select_prefill(const std::vector<node_snapshot*>& group, const policy_params& params);

// §7.3 level 1: the decode group with the smallest Σ tok_e among groups where some engine still has
// `r.kv_bytes` of free HBM (a full group cannot take the request, so it is skipped rather than chosen).
// `totals[i]` is Σ tok_e of `groups[i]`. Returns the index into `groups`, or -1.
int select_decode_group(const std::vector<node_snapshot*>& groups, const std::vector<uint64_t>& totals,
                        const request_info& r);
// The same rule when the caller already knows each group's largest free HBM (`max_free[i]`, of any engine
// of `groups[i]`): O(groups) per request, however full the engines are.
int select_decode_group(const std::vector<uint64_t>& totals, const std::vector<uint64_t>& max_free,
                        const request_info& r);
uint64_t max_free_hbm(const node_snapshot& group);
// A decode group may span nodes (group_layout): its engines are those of every node, in node order.
uint64_t max_free_hbm(const std::vector<node_snapshot*>& group);
uint64_t total_tok(const std::vector<node_snapshot*>& group);

// §7.3 level 2: R = the largest prefix of `queue` whose kv_bytes fit in the group's free HBM;
// Z = z_slack × (Σ_{r∈R} len_r + Σ_e tok_e) / |E|.
double decode_threshold(const node_snapshot& group, const std::vector<const request_info*>& queue, double z_slack);
double decode_threshold(const std::vector<node_snapshot*>& group, const std::vector<const request_info*>& queue,
                        double z_slack);

// §7.3 level 2: places the group's private queue in order. Among engines with enough HBM it prefers
// tok_e + len_r ≤ Z with the smallest seq_e, else the smallest tok_e; stops at the first request no engine
// can hold. Updates seq_e, tok_e (+len_r), free HBM. Returns per request the index into group.engines,
// -1 for the request where it stopped and every one after it.
std::vector<int> place_in_decode_group(node_snapshot& group, const std::vector<const request_info*>& queue,
                                       double z_slack);
// The same over a group of several nodes: one Z over all their engines, and each index counts the engines
// of every node in order (engine_at maps it back).
std::vector<int> place_in_decode_group(const std::vector<node_snapshot*>& group,
                                       const std::vector<const request_info*>& queue, double z_slack);
struct engine_ref {
  node_snapshot* node = nullptr;
  engine_snapshot* engine = nullptr;
};
engine_ref engine_at(const std::vector<node_snapshot*>& group, int index);

// §7.4: the node with the shorter read_q (ties go to the PE node, whose path has fewer hops).
read_path shorter_read_q(const node_snapshot& pe, const node_snapshot& de);

// §7.5 split read: how many of the request's hit blocks go through the PE node's SNIC so both SNICs
// drain their queues at the same time (equal SNIC rates: the free rate of a SNIC over the next
// interval is what its queue leaves over). Returns a count in [0, hit_blocks].
uint32_t split_pe_blocks(const request_info& r, uint64_t pe_read_q, uint64_t de_read_q);

// The bytes of the request's hit KV read through the PE node's SNIC (the rest go through the DE node's).
uint64_t pe_read_bytes(const assignment& a);

// Adds the request's reads to the two nodes' read_q according to `a.path` / `a.pe_blocks`.
void charge_reads(const assignment& a, node_snapshot& pe, node_snapshot& de);

}  // namespace dualpath::schedule
