#pragma once
// How a node moves KV between registered regions (docs/design.md §4, §7.7). The real data plane posts
// transfers through the engines' CNICs (libfabric endpoints); the oracle's zero-I/O bound copies with
// memcpy inside this process. The node picks one at start-up, so no data path asks which run this is.
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/copy_tracker.hpp"
#include "runtime/kv_types.hpp"
#include "transport/endpoint.hpp"

namespace dualpath::runtime {

// A node's fabric side: one endpoint per engine (its CNIC), the node's buffer and each engine's HBM
// registered at it, and where every peer engine is.
struct node_fabric {
  std::vector<uint32_t> engines;  // global engine id per local index
  std::byte* buffer = nullptr;
  uint64_t buffer_bytes = 0;
  std::vector<std::byte*> hbm;  // per local index
  uint64_t hbm_bytes = 0;
  std::vector<std::unique_ptr<transport::endpoint>> endpoints;
  std::vector<std::unique_ptr<transport::memory_region>> buffer_regions, hbm_regions;
  std::vector<std::vector<uint32_t>> peer_index;  // [local endpoint][global engine] -> address-vector index
  fabric_directory directory;

  std::optional<uint32_t> local_index(uint32_t engine) const;
  // Every op leaves from an engine of this node, goes to a known engine, and stays inside both regions.
  status validate(const std::vector<copy_op>& ops) const;
};

struct mover_stats {
  std::atomic<uint64_t> copies{0}, bytes{0}, errors{0};
  std::atomic<uint64_t> writes{0};  // provider operations: copies into back-to-back bytes go as one
};

class kv_mover {
 public:
  virtual ~kv_mover() = default;
  // Starts the copies (validated); `done` runs on the progress thread once every one finished.
  virtual void post(const std::vector<copy_op>& ops, transport::traffic_class tc, copy_tracker::done_fn done) = 0;
  // Drives transfers and runs the callbacks of finished batches (progress thread). True if any work was done.
  virtual bool progress() = 0;
  // True while nothing is in flight.
  virtual bool idle() const = 0;
  const mover_stats& stats() const { return stats_; }

 protected:
  mover_stats stats_;
};

std::unique_ptr<kv_mover> make_fabric_mover(node_fabric& fabric);
std::unique_ptr<kv_mover> make_memcpy_mover(const node_fabric& fabric);

}  // namespace dualpath::runtime
