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
#include "core/cluster_config.hpp"

namespace dualpath::storage {
class block_store;
}

namespace dualpath::actors {

struct cluster_view {
  runtime::kv_geometry geometry;
  uint64_t slot_stride = 0;     // bytes per DRAM buffer slot (the same on every node)
  uint64_t payload_offset = 0;  // Full Block payload inside a slot
  cluster_config config;        // the cluster file as validated by the launcher
  uint32_t vocab = 0;
  std::string policy;           // run policy: basic | layerwise | dualpath | round_robin | split | oracle
  storage::block_store* store = nullptr;  // clients look up hits; the store is a shared directory

  scheduler_actor scheduler;
  std::vector<traffic_queue_actor> traffic_queues;  // per node
  std::vector<engine_actor> engines;                // per global engine
  std::vector<leader_actor> leaders;                // per node
  std::vector<client_actor> clients;                // per agent

  double quota_s() const { return config.quota_ms / 1000.0; }
  uint64_t hbm_bytes() const { return uint64_t(config.hbm_gb * 1e9); }  // KV capacity of every engine's arena
  uint64_t model_traffic_bytes() const { return uint64_t(config.model_traffic_kb) * 1024; }
  uint32_t nodes() const { return config.total_nodes(); }
  uint32_t node_of(uint32_t engine) const { return engine / config.engines_per_node; }
  bool is_prefill_node(uint32_t node) const { return node < config.prefill_nodes; }
  uint64_t slot_offset(uint32_t slot) const { return uint64_t(slot) * slot_stride + payload_offset; }
  uint32_t agent_of(uint64_t request) const { return uint32_t(request >> 24); }
  static uint64_t request_id(uint32_t agent, uint32_t turn) { return (uint64_t(agent) << 24) | turn; }
};

using cluster_view_ptr = std::shared_ptr<cluster_view>;

}  // namespace dualpath::actors
