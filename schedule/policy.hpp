#pragma once
// Scheduling policies (docs/design.md §7): snapshots of the cluster in, assignments out. Plain C++: no actors,
// no I/O, no clocks, so every decision can be tested and benchmarked on its own.
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/kv_geometry.hpp"

namespace dualpath::schedule {

enum class role : uint8_t { prefill, decode };

// One engine's load as last reported by its leader (§7.1) and updated by the scheduler as it assigns.
struct engine_snapshot {
  uint32_t engine = 0;    // global engine id
  uint32_t node = 0;      // node (group) of the engine
  uint32_t seq = 0;       // seq_e: requests on the engine
  uint64_t tok = 0;       // tok_e: tokens the engine still has to process
  uint64_t free_hbm = 0;  // free KV bytes in the engine's HBM
};

// Every field (a leader leaves out a report equal to the last one sent, report_acks.hpp).
inline bool operator==(const engine_snapshot& a, const engine_snapshot& b) {
  return std::tie(a.engine, a.node, a.seq, a.tok, a.free_hbm) == std::tie(b.engine, b.node, b.seq, b.tok, b.free_hbm);
}

// One node (8 engines, rank 0 the leader) with its storage NIC queue; a group is one or more of them
// (group_layout).
struct node_snapshot {
  uint32_t node = 0;
  role kind = role::prefill;
  uint64_t read_q = 0;                   // bytes waiting on the node's SNIC
  std::vector<engine_snapshot> engines;  // the group's engines

  uint64_t total_tok() const;
};

inline bool operator==(const node_snapshot& a, const node_snapshot& b) {
  return std::tie(a.node, a.kind, a.read_q, a.engines) == std::tie(b.node, b.kind, b.read_q, b.engines);
}

// The scheduler's view of the whole cluster. Nodes are kept sorted by id (find is a binary search).
struct cluster_snapshot {
  std::vector<node_snapshot> nodes;

  node_snapshot* find(uint32_t node);
  const node_snapshot* find(uint32_t node) const;
  // Inserts or returns the node `node`; a node keeps its role until erased (adaptive P/D, §7.9, erases a
  // draining node and inserts it again in its new role).
  node_snapshot& upsert(uint32_t node, role kind);
  void erase(uint32_t node);
  size_t engine_count(role kind) const;
};

// What the scheduler knows about a waiting request.
struct request_info {
  uint64_t id = 0;
  uint64_t hit_tokens = 0;     // context whose KV is in storage
  uint64_t append_tokens = 0;  // tokens the PE computes this turn
  uint64_t hit_bytes = 0;      // bytes of hit KV to read from storage
  uint64_t len = 0;            // total tokens (hit + append): what the DE will hold
  uint64_t kv_bytes = 0;       // HBM the request needs on its DE
  uint32_t hit_blocks = 0;     // Full Blocks of hit KV
};

// A turn of `prompt_tokens` (its leading `hit_blocks` Full Blocks in storage) that generates `gen` tokens,
// as the scheduler sees it. The runtime's agent clients and the simulator both describe turns with this.
request_info make_request_info(uint64_t id, uint64_t prompt_tokens, uint32_t gen, uint32_t hit_blocks,
                               const kv_geometry& g);

enum class read_path : uint8_t { pe, de, split };
const char* to_string(read_path p);

struct assignment {
  request_info request;
  uint32_t pe = 0, pe_node = 0;
  uint32_t de = 0, de_node = 0;
  read_path path = read_path::pe;
  // split: blocks [0, pe_blocks) are read through the PE node's SNIC, the rest through the DE node's.
  // pe: pe_blocks == hit_blocks; de: pe_blocks == 0.
  uint32_t pe_blocks = 0;
};

// Which nodes form one group (docs/design.md §7.2, §7.3; the paper's Figure 5). Prefill group g is the
// prefill nodes [g·k, g·k + k) with k = pe_group_nodes; decode group j is the decode nodes
// [first_decode_node + j·k, first_decode_node + j·k + k) with k = de_group_nodes. The default (one node
// per group) is the layout every caller had before groups could span nodes.
struct group_layout {
  uint32_t pe_group_nodes = 1;
  uint32_t de_group_nodes = 1;
  uint32_t first_decode_node = 0;  // id of the first decode node (= prefill_nodes); read only when de_group_nodes > 1

  // The first node of `node`'s prefill group: the one whose leader fetches for the whole group.
  uint32_t pe_group_first(uint32_t node) const { return node - node % pe_group_nodes; }
  bool fetches(uint32_t prefill_node) const { return prefill_node % pe_group_nodes == 0; }
  uint32_t de_group(uint32_t decode_node) const {
    return de_group_nodes <= 1 ? decode_node : (decode_node - first_decode_node) / de_group_nodes;
  }
};

// Thresholds of §7.2/§7.3; see calibration.hpp for α and β from the hardware profile.
struct policy_params {
  uint64_t alpha_tokens = 0;        // α: tokens a SNIC reads in 3 s (compared with read_q in tokens)
  uint64_t beta_tokens = 0;         // β: tokens one engine prefills in 5 s
  uint64_t kv_bytes_per_token = 1;  // converts read_q (bytes) into tokens
  double z_slack = 1.05;            // Z = z_slack × mean load (§7.3)
  group_layout groups;              // one node per group unless the cluster file says otherwise

  uint64_t alpha_bytes() const { return alpha_tokens * kv_bytes_per_token; }
};

class policy {
 public:
  virtual ~policy() = default;
  virtual std::string_view name() const = 0;
  // The PE group of node `pe_node` (params.groups: every prefill node of that group, whichever of them
  // is named) fetches work: assign requests FIFO from the head of `waiting`, choosing for each its PE (in
  // that group), its DE (anywhere) and its read path. Assigned requests are popped;
  // the first request that cannot be placed stops the pass and stays at the head. `snap` is updated as
  // requests are assigned (tok_e, seq_e, free HBM, read_q), so one call never overloads an engine.
  virtual std::vector<assignment> assign(cluster_snapshot& snap, uint32_t pe_node, std::deque<request_info>& waiting,
                                         const policy_params& params) = 0;
};

// The registered names, in display order: dualpath, basic, round_robin, split, alternate, framework.
const std::vector<std::string>& policy_names();
bool is_policy_name(std::string_view name);
// Throws user_error listing the known names when `name` is unknown.
std::unique_ptr<policy> make_policy(std::string_view name);

}  // namespace dualpath::schedule
