#pragma once
// The cluster file (TOML): model, layout, hardware caps, storage and scheduling of one run.
// Unknown keys, wrong types and impossible values are refused with file, key and reason.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/modes.hpp"

namespace dualpath {

// What the prefill compute quota bounds (docs/design.md §7.6), parsed once from `schedule.quota_scope`.
enum class quota_scope_kind : uint8_t {
  layer,      // the attention time of ONE layer for the whole batch (the paper's per-layer quota)
  attention,  // the attention time of all layers together
  forward,    // the whole forward pass (one GPU per engine: the pass is the engine's own time)
};
const std::vector<std::string>& quota_scope_names();
const char* to_string(quota_scope_kind k);
result<quota_scope_kind> parse_quota_scope(std::string_view name);

// How a prefill engine gets hit KV from a decode node's buffer (docs/design.md §4), from `hardware.de_fetch`.
enum class de_fetch_kind : uint8_t {
  push,       // it asks the decode node's traffic queue, whose CNIC writes the blocks into its HBM (a message a layer)
  pull,       // its own CNIC reads them (one-sided RMA reads, no message to the decode node)
  automatic,  // "auto": pull where nodes are processes of their own, push where they share one (docs/design.md §4)
};
const char* to_string(de_fetch_kind k);
result<de_fetch_kind> parse_de_fetch(std::string_view name);
// The kind a run uses: `automatic` resolved for nodes in processes of their own or not.
de_fetch_kind resolve_de_fetch(de_fetch_kind k, bool node_processes);

struct policy_switch {
  double at_s = 0;
  std::string policy;
};

struct cluster_config {
  // [model]
  std::string model = "tiny";  // catalog name or path to a model directory
  backend_kind backend = backend_kind::cpu;
  std::string gpu = "h800";  // modeled backend: GPU profile
  double mfu = 0.4;          // modeled backend: model FLOPs utilisation
  uint64_t seed = 1;         // weights of catalog models are generated from this seed
  // [cluster]
  uint32_t prefill_nodes = 1;
  uint32_t decode_nodes = 2;
  uint32_t engines_per_node = 1;
  uint32_t block_tokens = 0;  // 0 = the model's own block size
  // Nodes per scheduling group (docs/design.md §7.2, §7.3): prefill group g = prefill nodes [g·k, g·k + k),
  // decode groups likewise over the decode nodes. Each divides its node count.
  uint32_t pe_group_nodes = 1;
  uint32_t de_group_nodes = 1;
  bool ep_sync = false;  // a PE group's engines finish every layer together (docs/design.md §7.6)
  // [hardware]
  double snic_gb_per_s = 0;      // per node; 0 = uncapped
  double cnic_gb_per_s = 0;      // per engine and direction; 0 = uncapped
  double dram_buffer_gb = 0.25;  // per node: PE/DE buffer for Full Blocks
  double hbm_gb = 0.125;         // per engine: KV capacity of the HBM arena
  double prefill_hbm_gb = 0;     // per prefill engine, when it differs (0 = hbm_gb): the HBM a GPU has left
                                 // for KV differs between roles (weights, activations, batch sizes)
  std::string provider = "shm";
  de_fetch_kind de_fetch = de_fetch_kind::automatic;
  double kv_share = 0.01;
  bool isolation = true;
  // [storage]
  std::string store_dir = "dualpath-data";
  double capacity_gb = 0;  // 0 = unlimited
  bool fsync = false;
  // Per node: at most this many GB of filled blocks wait for the store; a block beyond it is not persisted
  // (counted; a later turn recomputes it), so memory stays bounded when the store is slower than the
  // decode engines' write-back. 0 = unbounded.
  double write_queue_gb = 0;
  // [schedule]
  std::string policy = "dualpath";
  double alpha_s = 3.0;       // α = tokens a SNIC reads in alpha_s seconds
  double beta_s = 5.0;        // β = tokens an engine prefills in beta_s seconds
  uint64_t alpha_tokens = 0;  // overrides α when set (0 = calibrate from the SNIC rate)
  uint64_t beta_tokens = 0;   // overrides β when set (0 = calibrate from the compute fit)
  double z_slack = 1.05;      // decode level-2 threshold Z = z_slack × mean load (docs/design.md §7.3)
  double quota_ms = 300.0;    // intra-engine compute quota per forward pass (docs/design.md §7.6)
  quota_scope_kind quota_scope = quota_scope_kind::layer;
  std::vector<policy_switch> switches;
  // [runtime]
  uint32_t prefetch_layers = 2;  // layers of hit KV in flight ahead of the one computing
  // Further layers of hit KV a layer-wise pass stages ahead where the HBM its batch leaves free holds them
  // (batches are sized for prefetch_layers; docs/design.md §4).
  uint32_t spare_staging_layers = 2;
  uint32_t max_decode_batch = 64;
  uint32_t model_traffic_kb = 0;  // per decode step, model-class bytes sent to the next decode engine
                                  // (emulates the expert-parallel all-to-all; 0 = off)
  double timeout_s = 60.0;        // any single wait (transfer, read, reply) longer than this fails the run
  // The cluster's secret for the registry and the control port (docs/design.md §13); "" = DUALPATH_SECRET or
  // generated. Never written back by format_cluster_config: node processes get it in their environment.
  std::string secret;
  // [serve] admission of `dualpath serve` (docs/design.md §18): past these a request is answered 429.
  uint32_t serve_max_requests = 8;       // requests in the cluster at once (its serving clients)
  uint32_t serve_max_waiting = 0;        // of them, not yet at their first token; 0 = max_requests
  uint64_t serve_max_queued_tokens = 0;  // prompt tokens of the waiting ones; 0 = unbounded

  // [planner] adaptive P/D (docs/design.md §7.9): a node moves between roles when one role's load calls for it.
  bool adaptive = false;
  double planner_window_s = 2.0;   // the planner looks at each window's load
  double planner_switch_s = 2.0;   // a drained node's role switch: HBM and buffers laid out again, peers told
  double planner_cooldown_s = 10;  // no move this soon after the last one finished
  uint32_t planner_sustain = 3;    // a move is made once this many windows in a row call for it
  double planner_high = 0.9;       // pressures of schedule/role_planner.hpp
  double planner_low = 0.5;
  double planner_tpot_slo_s = 0.05;
  uint32_t total_nodes() const { return prefill_nodes + decode_nodes; }
  double prefill_hbm() const { return prefill_hbm_gb > 0 ? prefill_hbm_gb : hbm_gb; }
};

// Parses a cluster file; throws user_error naming file, key and reason.
cluster_config load_cluster_config(const std::string& path);
// Same from a string (`origin` names it in messages).
cluster_config parse_cluster_config(const std::string& text, const std::string& origin);
// The cluster file that parses back to `c` (every key written, doubles exactly): how a launcher hands its
// validated configuration to the node processes it starts.
std::string format_cluster_config(const cluster_config& c);
// Checks values that only make sense together (e.g. HBM smaller than one block); throws user_error.
void validate_cluster_config(const cluster_config& c, const std::string& origin);

}  // namespace dualpath
