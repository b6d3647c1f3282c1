#pragma once
// What every engine, leader and client knows about the cluster: geometry, who is where, and the actor
// handles to reach them. Built once by the launcher before any request flows.
#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/kv_geometry.hpp"
#include "runtime/kv_plan.hpp"
#include "protocol/interfaces.hpp"
#include "actors/scheduler.hpp"
#include "core/cluster_config.hpp"

namespace dualpath::storage {
class block_store;
}

namespace dualpath::actors {

struct cluster_view {
  runtime::kv_geometry geometry;
  runtime::slot_layout slots;   // DRAM buffer slots, the same on every node
  cluster_config config;        // the cluster file as validated by the launcher
  uint32_t vocab = 0;
  run_mode mode;                // the run policy, parsed (core/modes.hpp)
  storage::block_store* store = nullptr;  // clients look up hits; the store is a shared directory

  scheduler_actor scheduler;
  std::vector<traffic_queue_actor> traffic_queues;  // per node
  // Per global engine id; the entry of the other role is an empty handle.
  std::vector<prefill_engine_actor> prefill_engines;
  std::vector<decode_engine_actor> decode_engines;
  std::vector<leader_actor> leaders;                // per node
  std::vector<client_actor> clients;                // per agent

  uint32_t engine_count() const { return nodes() * config.engines_per_node; }
  // Files `engine` (spawned here or received from another process) under its role's handles.
  void set_engine(uint32_t engine, const caf::actor& a);
  double quota_s() const { return config.quota_ms / 1000.0; }
  uint64_t hbm_bytes() const { return uint64_t(config.hbm_gb * 1e9); }  // KV capacity of every engine's arena
  uint64_t model_traffic_bytes() const { return uint64_t(config.model_traffic_kb) * 1024; }
  uint32_t nodes() const { return config.total_nodes(); }
  uint32_t node_of(uint32_t engine) const { return engine / config.engines_per_node; }
  bool is_prefill_node(uint32_t node) const { return node < config.prefill_nodes; }
  uint32_t agent_of(uint64_t request) const { return uint32_t(request >> 24); }
  static uint64_t request_id(uint32_t agent, uint32_t turn) { return (uint64_t(agent) << 24) | turn; }
};

inline void cluster_view::set_engine(uint32_t engine, const caf::actor& a) {
  if (is_prefill_node(node_of(engine))) prefill_engines.at(engine) = caf::actor_cast<prefill_engine_actor>(a);
  else decode_engines.at(engine) = caf::actor_cast<decode_engine_actor>(a);
}

using cluster_view_ptr = std::shared_ptr<cluster_view>;

}  // namespace dualpath::actors
