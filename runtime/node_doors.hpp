#pragma once
// The two doors into a node's data plane (docs/design.md §3). The node's traffic-queue actor holds its
// `data_plane`: the commands its messages carry (load, reserve, release, copy), answered by callbacks on
// the progress thread. The node's engines and leader hold its `node_services`: what they use within the
// node without a message (the engines' HBM arenas, their copies through the node's own endpoints, the decode
// engines' write-back, the leader's read-queue report). Actors see only these two; the implementation
// (runtime::node_io) stays below them.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/block_key.hpp"
#include "core/status.hpp"
#include "gpu/hbm_arena.hpp"
#include "runtime/kv_types.hpp"
#include "transport/endpoint.hpp"

namespace dualpath::runtime {

// The node's read_q and the requests whose reads it counts, for its leader's report (docs/design.md §7.1).
struct read_queue_report {
  uint64_t read_q = 0;
  std::vector<uint64_t> requests;  // loads asked for now, or at some point since the previous report
};

class data_plane {
 public:
  virtual ~data_plane() = default;
  // Reserves `count` buffer slots, waiting (FIFO) while the buffer is full; `done` gets them, or an error
  // when the request alone is larger than the whole buffer or the wait exceeds the timeout.
  virtual void reserve(uint32_t count, std::function<void(result<std::vector<uint32_t>>)> done) = 0;
  // Reserves slots for `keys` and reads those Full Blocks through the SNIC into them. The load's bytes
  // count in read_q from this call on, also while it waits for slots; `request` (0: none) names it in
  // the read-queue report.
  virtual void load(std::vector<block_key> keys, std::function<void(load_result)> done, uint64_t request) = 0;
  virtual void release(const std::vector<uint32_t>& slots) = 0;
  // Posts copies (sliced, arbitrated, capped by the endpoints); `done` runs once all finished.
  virtual void copy(std::vector<copy_op> ops, transport::traffic_class tc, std::function<void(status)> done) = 0;
};

class node_services {
 public:
  virtual ~node_services() = default;
  // The HBM arena of one of this node's engines (global engine id).
  virtual gpu::hbm_arena& hbm(uint32_t engine) = 0;
  // Posts copies from this node's CNICs, as data_plane::copy: an engine's copies from its own node (its
  // fetches from its node's buffer, its forwards, its HBM loads) go here rather than through the traffic
  // queue's actor, two hand-offs between threads fewer a copy (docs/design.md §4). `done` runs on the
  // progress thread.
  virtual void copy(std::vector<copy_op> ops, transport::traffic_class tc, std::function<void(status)> done) = 0;
  // Writes a Full Block to storage in the background (the payload is copied first); `done` (may be empty)
  // runs on the writer thread afterwards, whether or not the write succeeded.
  virtual void persist(block_key key, block_key parent, const std::byte* payload, std::function<void()> done) = 0;
  // read_q with the requests it counts. The ids are taken before the bytes, so a request named is either
  // in the bytes or done. Meant for one caller, the leader: each call forgets the loads finished before it.
  virtual read_queue_report take_read_report() = 0;
};

}  // namespace dualpath::runtime
