#pragma once
// What every engine, leader and client knows about the cluster: geometry, who is where, and the actor
// handles to reach them. Built once by the launcher before any request flows.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actors/kv_geometry.hpp"
#include "actors/runtime_actors.hpp"
#include "actors/scheduler.hpp"

namespace dualpath::storage {
class block_store;
}

namespace dualpath::actors {

struct cluster_view {
  runtime::kv_geometry geometry;
  uint64_t slot_stride = 0;     // bytes per DRAM buffer slot (the same on every node)
  uint64_t payload_offset = 0;  // Full Block payload inside a slot
  uint32_t prefill_nodes = 0, decode_nodes = 0, engines_per_node = 0;
  std::string backend;          // cpu | cuda | modeled
  uint32_t vocab = 0;
  std::string policy;           // run policy: basic | layerwise | dualpath | round_robin | split | oracle
  uint32_t prefetch_layers = 2; // layer-wise depth; `basic` loads every layer first
  double quota_s = 0.3;
  std::string quota_scope = "attention";  // what the compute quota bounds: attention (§7.6) or the forward pass
  uint32_t max_decode_batch = 64;
  uint64_t hbm_bytes = 0;       // KV capacity of every engine's HBM arena
  uint64_t model_traffic_bytes = 0;  // per decode step, to the next decode engine (model class)
  double timeout_s = 60;
  storage::block_store* store = nullptr;  // clients look up hits; the store is a shared directory

  scheduler_actor scheduler;
  std::vector<traffic_queue_actor> traffic_queues;  // per node
  std::vector<engine_actor> engines;                // per global engine
  std::vector<leader_actor> leaders;                // per node
  std::vector<client_actor> clients;                // per agent

  uint32_t nodes() const { return prefill_nodes + decode_nodes; }
  uint32_t node_of(uint32_t engine) const { return engine / engines_per_node; }
  bool is_prefill_node(uint32_t node) const { return node < prefill_nodes; }
  uint64_t slot_offset(uint32_t slot) const { return uint64_t(slot) * slot_stride + payload_offset; }
  uint32_t agent_of(uint64_t request) const { return uint32_t(request >> 24); }
  static uint64_t request_id(uint32_t agent, uint32_t turn) { return (uint64_t(agent) << 24) | turn; }
};

using cluster_view_ptr = std::shared_ptr<cluster_view>;

}  // namespace dualpath::actors
