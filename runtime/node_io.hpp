#pragma once
// The data plane of one node, owned by its traffic-queue actor (docs/design.md §3, §4): the node's SNIC gate into
// the shared block store, its DRAM buffer (PE or DE buffer) cut into Full Block slots, one fabric endpoint
// per engine (its CNIC) and each engine's HBM arena, all registered with that endpoint.
//
// One progress thread per node owns every endpoint (libfabric endpoints are single-threaded) and drives
// storage reads, transfers and buffer backpressure. Callers post commands from any thread; completions
// are delivered through callbacks on the progress thread, which the actor turns into messages.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/kv_geometry.hpp"
#include "core/block_key.hpp"
#include "core/status.hpp"
#include "gpu/hbm_arena.hpp"
#include "storage/block_store.hpp"
#include "storage/snic_gate.hpp"
#include "transport/endpoint.hpp"
#include "transport/host_buffer.hpp"

namespace dualpath::runtime {

enum class region_kind : uint8_t { buffer, hbm };

// What every peer needs to reach one engine's CNIC: its address and its two registered regions.
struct endpoint_entry {
  uint32_t engine = 0;
  uint32_t node = 0;
  transport::address_bytes address;
  transport::remote_region buffer;  // the node's DRAM buffer as registered at this endpoint
  transport::remote_region hbm;     // the engine's HBM arena
  std::byte* buffer_base = nullptr;  // local addresses, used only by the in-process I/O bypass (oracle)
  std::byte* hbm_base = nullptr;
};
using fabric_directory = std::vector<endpoint_entry>;  // indexed by global engine id

// One copy: [src_offset, +length) of a local region at endpoint `via` (a global engine id on this node)
// to [dst_offset, +length) of region `dst_kind` at engine `dst_engine` (any node; `via` itself = loopback).
struct copy_op {
  uint32_t via = 0;
  region_kind src_kind = region_kind::buffer;
  uint64_t src_offset = 0;
  uint32_t dst_engine = 0;
  region_kind dst_kind = region_kind::hbm;
  uint64_t dst_offset = 0;
  uint64_t length = 0;
};

struct load_result {
  std::vector<uint32_t> slots;  // one per requested key, in order
  uint32_t valid = 0;           // leading blocks that arrived intact (a miss from the first bad one on)
  uint64_t bytes = 0;           // bytes read through the SNIC
  dualpath::status status;      // why the first bad block is bad (ok if all arrived)
};

struct node_io_options {
  uint32_t node = 0;
  std::vector<uint32_t> engines;     // global engine ids of this node, local index = position
  kv_geometry geometry;
  uint64_t buffer_bytes = 0;         // DRAM buffer for Full Blocks
  uint64_t hbm_bytes = 0;            // per engine
  double snic_gb_per_s = 0;          // 0 = uncapped
  transport::fabric_options fabric;  // provider, CNIC cap, isolation
  std::chrono::milliseconds timeout{60000};
  // The zero-I/O bound (`oracle`): loads read the store directly, bypassing the SNIC gate and its cap,
  // and copies are plain memcpy in this process instead of fabric transfers.
  bool bypass = false;
};

struct node_io_stats {
  uint64_t snic_bytes = 0;       // bytes read from storage through this node's SNIC
  uint64_t snic_reads = 0;
  uint64_t read_failures = 0;
  uint64_t copies = 0, copy_bytes = 0, copy_errors = 0;
  uint64_t persisted_blocks = 0, persist_errors = 0;
  uint32_t slots_total = 0, slots_free = 0, slots_low_water = 0;
};

class node_io {
 public:
  node_io(const node_io_options& options, storage::block_store& store);
  ~node_io();
  node_io(const node_io&) = delete;
  node_io& operator=(const node_io&) = delete;

  // This node's endpoints, for the cluster-wide directory; then connect() every endpoint to every peer.
  std::vector<endpoint_entry> entries() const;
  void connect(const fabric_directory& directory);

  gpu::hbm_arena& hbm(uint32_t engine);
  std::byte* slot_data(uint32_t slot) const;  // payload of a buffer slot: one Full Block
  uint64_t slot_offset(uint32_t slot) const;  // its offset in the buffer region (for copy_op)
  uint64_t hbm_offset(uint32_t engine, const std::byte* p);  // offset of p in the engine's HBM region
  uint32_t slots_total() const { return slots_total_; }

  // Reserves `count` buffer slots, waiting (FIFO) while the buffer is full; `done` gets them, or an error
  // when the request alone is larger than the whole buffer or the wait exceeds the timeout.
  void reserve(uint32_t count, std::function<void(result<std::vector<uint32_t>>)> done);
  // Reserves slots for `keys` and reads those Full Blocks through the SNIC gate into them.
  void load(std::vector<block_key> keys, std::function<void(load_result)> done);
  void release(const std::vector<uint32_t>& slots);
  // Posts copies (sliced, arbitrated, capped by the endpoints); `done` runs once all finished.
  void copy(std::vector<copy_op> ops, transport::traffic_class tc, std::function<void(status)> done);
  // Writes a Full Block to storage in the background (the payload is copied first); `done` (optional)
  // runs on the writer thread afterwards, whether or not the write succeeded.
  void persist(block_key key, block_key parent, const std::byte* payload, std::function<void()> done = {});

  uint64_t read_q() const;
  node_io_stats stats() const;
  uint32_t node() const { return options_.node; }

 private:
  struct pending_reserve;
  struct pending_load;
  struct pending_copy;
  void run();
  void progress_reserves();
  void post_load(std::shared_ptr<pending_load> load);
  uint32_t local_index(uint32_t engine) const;

  node_io_options options_;
  storage::block_store& store_;
  storage::snic_gate gate_;
  uint64_t slot_stride_ = 0;
  uint32_t slots_total_ = 0;
  // Registered memory comes from huge-page host buffers: shm copies through the kernel pin far fewer pages.
  transport::host_buffer buffer_memory_;
  std::byte* buffer_ = nullptr;
  std::vector<transport::host_buffer> hbm_memory_;
  std::vector<std::unique_ptr<gpu::hbm_arena>> hbm_;
  std::vector<std::unique_ptr<transport::endpoint>> endpoints_;
  std::vector<std::unique_ptr<transport::memory_region>> buffer_regions_;
  std::vector<std::unique_ptr<transport::memory_region>> hbm_regions_;
  std::vector<std::vector<uint32_t>> peer_index_;  // [local endpoint][global engine] -> AV index
  fabric_directory directory_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<uint32_t> free_slots_;
  std::deque<std::shared_ptr<pending_reserve>> reserves_;
  std::deque<std::function<void()>> commands_;  // run on the progress thread (endpoint calls)
  std::vector<std::shared_ptr<pending_load>> loads_;
  uint64_t next_context_ = 1;
  std::vector<std::pair<uint64_t, std::shared_ptr<pending_copy>>> copies_;  // context -> batch
  node_io_stats stats_;
  std::atomic<bool> stop_{false};
  std::thread thread_;

  // Background worker for slow storage calls (persist writes, bypass loads): they must not stall transfers.
  void post_background(std::function<void()> task);
  std::mutex persist_mutex_;
  std::condition_variable persist_wake_;
  std::deque<std::function<void()>> background_;
  std::thread persist_thread_;
};

}  // namespace dualpath::runtime
