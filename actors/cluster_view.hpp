#pragma once
// What every engine, leader and client knows about the cluster: geometry, who is where, and the actor
// handles to reach them. Built once by the launcher before any request flows.
#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "actors/vocabulary.hpp"
#include "core/block_key.hpp"
#include "core/kv_geometry.hpp"
#include "runtime/kv_plan.hpp"
#include "protocol/interfaces.hpp"
#include "actors/scheduler.hpp"
#include "core/cluster_config.hpp"

namespace dualpath::actors {

enum class node_role : uint8_t { prefill, decode, switching };

struct cluster_view {
  kv_geometry geometry;
  runtime::slot_layout slots;  // DRAM buffer slots, the same on every node
  cluster_config config;       // the cluster file as validated by the launcher
  uint32_t vocab = 0;
  run_mode mode;  // the run policy, parsed (core/modes.hpp)
  // How many leading blocks of a chain storage holds: the one read a client makes of the store (its hit
  // count at submit), so no actor here holds the store itself. Safe from any thread.
  std::function<size_t(const std::vector<block_key>&)> stored_prefix;

  scheduler_actor scheduler;
  // Filled before any request flows; once actors run, a node's handles are read through the accessors
  // below, because a node that rejoins (docs/design.md §13) replaces its own while engines send to them.
  std::vector<traffic_queue_actor> traffic_queues;  // per node
  // Per global engine id; the entry of the other role is an empty handle.
  std::vector<prefill_engine_actor> prefill_engines;
  std::vector<decode_engine_actor> decode_engines;
  std::vector<leader_actor> leaders;  // per node
  std::vector<client_actor> clients;  // per agent (never replaced)

  traffic_queue_actor traffic_queue(uint32_t node) const { return read_locked(traffic_queues, node); }
  leader_actor leader(uint32_t node) const { return read_locked(leaders, node); }
  prefill_engine_actor prefill_engine(uint32_t engine) const { return read_locked(prefill_engines, engine); }
  decode_engine_actor decode_engine(uint32_t engine) const { return read_locked(decode_engines, engine); }
  // Files node `h.node`'s handles (at wiring, or when it rejoins), its engines under their roles, and
  // counts one more generation of it.
  void set_node(const node_handles& h);
  // How many times this process filed node `node`'s handles. A request remembers its DE node's generation
  // at assignment; once that node rejoined (a new process), what the request holds there (buffer slots, a
  // hand-off due) belonged to the dead one, and nothing more about it may be sent (docs/design.md §13).
  uint32_t generation(uint32_t node) const {
    std::shared_lock lock(*handles_mutex_);
    return node < generations_.size() ? generations_[node] : 0;
  }

  uint32_t engine_count() const { return nodes() * config.engines_per_node; }
  // Files `engine` (spawned here or received from another process) under its role's handles.
  void set_engine(uint32_t engine, const caf::actor& a);
  double quota_s() const { return config.quota_ms / 1000.0; }
  uint64_t hbm_bytes() const { return uint64_t(config.hbm_gb * 1e9); }  // KV capacity of every engine's arena
  uint64_t model_traffic_bytes() const { return uint64_t(config.model_traffic_kb) * 1024; }
  // Whether a turn whose prompt and generation need `kv_bytes` of KV fits a decode engine's HBM at all (beside
  // the model traffic's buffer): one that does not would wait in the scheduler's queue for ever.
  bool fits_decode_engine(uint64_t kv_bytes) const { return kv_bytes + model_traffic_bytes() <= hbm_bytes(); }
  uint32_t nodes() const { return config.total_nodes(); }
  uint32_t node_of(uint32_t engine) const { return engine / config.engines_per_node; }
  // Nodes 0..P−1 start as prefill nodes; with adaptive P/D (docs/design.md §7.9) a node changes role
  // (set_role, between its old engines' exit and its new engines' filing) and a switching node is in neither.
  bool is_prefill_node(uint32_t node) const {
    std::shared_lock lock(*handles_mutex_);
    return role_locked(node) == node_role::prefill;
  }
  void set_role(uint32_t node, node_role r) {
    std::unique_lock lock(*handles_mutex_);
    if (roles_.empty())
      for (uint32_t n = 0; n < nodes(); ++n)
        roles_.push_back(n < config.prefill_nodes ? node_role::prefill : node_role::decode);
    roles_.at(node) = r;
  }
  // The decode engine after `engine` in id order, cyclic over the nodes decoding now (`engine` itself when
  // it is the only one): a decode engine's all-to-all peer. Asked every decode step, so it allocates nothing.
  uint32_t next_decode_engine(uint32_t engine) const {
    std::shared_lock lock(*handles_mutex_);
    const uint32_t total = engine_count();
    for (uint32_t k = 1; k < total; ++k) {
      const uint32_t e = (engine + k) % total;
      if (role_locked(node_of(e)) == node_role::decode) return e;
    }
    return engine;
  }
  // Multi-process runs: how long a client holds a failed attempt, waiting for news that a node was lost
  // (then the turn is re-run instead of failed); 0 (embedded runs): a failure is final at once.
  double node_loss_grace_s = 0;

 private:
  template <class Handle>
  Handle read_locked(const std::vector<Handle>& v, uint32_t i) const {
    std::shared_lock lock(*handles_mutex_);
    return v.at(i);
  }
  // Shared by copies of the view (a copy reads the same kind of vectors, so the same lock serves).
  std::shared_ptr<std::shared_mutex> handles_mutex_ = std::make_shared<std::shared_mutex>();
  std::vector<uint32_t> generations_;  // per node, under the lock
  std::vector<node_role> roles_;       // per node once a role changed (empty: the cluster file's split)

  node_role role_locked(uint32_t node) const {
    if (node < roles_.size()) return roles_[node];
    return node < config.prefill_nodes ? node_role::prefill : node_role::decode;
  }
  void set_engine_locked(uint32_t engine, const caf::actor& a);
};

inline void cluster_view::set_node(const node_handles& h) {
  std::unique_lock lock(*handles_mutex_);
  traffic_queues.at(h.node) = caf::actor_cast<traffic_queue_actor>(h.traffic_queue);
  leaders.at(h.node) = caf::actor_cast<leader_actor>(h.leader);
  for (size_t i = 0; i < h.engines.size(); ++i)
    set_engine_locked(uint32_t(h.node * config.engines_per_node + i), h.engines[i]);
  if (generations_.size() <= h.node) generations_.resize(h.node + 1, 0);
  ++generations_[h.node];
}

inline void cluster_view::set_engine(uint32_t engine, const caf::actor& a) {
  std::unique_lock lock(*handles_mutex_);
  set_engine_locked(engine, a);
}

// The entry of the other role is emptied: a node that changed role has no engine of its old one.
inline void cluster_view::set_engine_locked(uint32_t engine, const caf::actor& a) {
  if (role_locked(node_of(engine)) == node_role::prefill) {
    prefill_engines.at(engine) = caf::actor_cast<prefill_engine_actor>(a);
    decode_engines.at(engine) = decode_engine_actor{};
  } else {
    decode_engines.at(engine) = caf::actor_cast<decode_engine_actor>(a);
    prefill_engines.at(engine) = prefill_engine_actor{};
  }
}

using cluster_view_ptr = std::shared_ptr<cluster_view>;

}  // namespace dualpath::actors
