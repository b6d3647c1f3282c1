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
#include <unordered_map>
#include <vector>

#include "core/kv_geometry.hpp"
#include "runtime/background_writer.hpp"
#include "runtime/block_path.hpp"
#include "runtime/copy_pool.hpp"
#include "runtime/dram_blocks.hpp"
#include "runtime/kv_mover.hpp"
#include "runtime/kv_types.hpp"
#include "runtime/node_doors.hpp"
#include "runtime/slot_pool.hpp"
#include "runtime/snic_sampler.hpp"
#include "core/block_key.hpp"
#include "core/status.hpp"
#include "gpu/hbm_arena.hpp"
#include "storage/block_store.hpp"
#include "transport/endpoint.hpp"
#include "runtime/due_calls.hpp"
#include "transport/host_buffer.hpp"

namespace dualpath::runtime {

struct node_io_options {
  uint32_t node = 0;
  std::vector<uint32_t> engines;  // global engine ids of this node, local index = position
  kv_geometry geometry;
  uint64_t buffer_bytes = 0;  // DRAM buffer for Full Blocks
  uint64_t hbm_bytes = 0;     // per engine: its arena's capacity
  // Per engine: the memory registered for its HBM, at least hbm_bytes (0 = hbm_bytes). Adaptive P/D
  // registers the larger of the two roles' HBM once, so a role switch lays the arena out again in place.
  uint64_t hbm_region_bytes = 0;
  double snic_gb_per_s = 0;          // 0 = uncapped
  transport::fabric_options fabric;  // provider, CNIC cap, isolation
  std::chrono::milliseconds timeout{60000};
  // The zero-I/O bound (`oracle`): loads copy hit KV from `dram` (the blocks persisted in this run, kept in
  // memory), bypassing the SNIC gate, its cap and the block files; writes bypass the SNIC's write pacer; and
  // copies are plain memcpy in this process instead of fabric transfers (a memcpy kv_mover).
  bool bypass = false;
  uint64_t write_queue_bytes = 0;     // block copies waiting for the store, at most (0 = unbounded)
  std::shared_ptr<dram_blocks> dram;  // with bypass: shared by every node of the run
};

struct node_io_stats {
  uint64_t snic_bytes = 0;        // bytes read from storage through this node's SNIC
  uint64_t store_read_bytes = 0;  // bytes read from block files by this node, by any path (0 for the oracle)
  uint64_t snic_write_bytes = 0;  // bytes written to storage through this node's SNIC (write-back, paced)
  uint64_t snic_reads = 0;
  uint64_t read_failures = 0;
  uint64_t copies = 0, copy_bytes = 0, copy_errors = 0;
  uint64_t copy_writes = 0;  // the provider operations the copies went as (gathered: fewer)
  uint64_t persisted_blocks = 0, persist_errors = 0;
  uint64_t write_queue_peak_bytes = 0;  // the most bytes of block copies ever waiting for the store at once
  uint32_t slots_total = 0, slots_free = 0, slots_low_water = 0;
};

class node_io final : public data_plane, public node_services {
 public:
  node_io(const node_io_options& options, storage::block_store& store);
  ~node_io();
  node_io(const node_io&) = delete;
  node_io& operator=(const node_io&) = delete;

  // Ends the progress thread and waits for storage reads still running; no transfer moves after it.
  // Nodes of one process that copy into each other's memory are all stopped before any is destroyed:
  // a run stopped mid-transfer must not have one node write into another's freed buffer.
  void stop();

  // This node's endpoints, for the cluster-wide directory; then connect() every endpoint to every peer.
  std::vector<endpoint_entry> entries() const;
  void connect(const fabric_directory& directory);

  gpu::hbm_arena& hbm(uint32_t engine) override;
  // Adaptive P/D (docs/design.md §7.9): engine's arena laid out again with `capacity` bytes (at most its
  // registered region), its first `reserve_front` bytes taken and never given out. Only between the exit of
  // the engine's actor and the start of the next one: nothing else may hold the arena then.
  void relayout_hbm(uint32_t engine, uint64_t capacity, uint64_t reserve_front);
  std::byte* slot_data(uint32_t slot) const;                 // payload of a buffer slot: one Full Block
  uint64_t slot_offset(uint32_t slot) const;                 // its offset in the buffer region (for copy_op)
  uint64_t hbm_offset(uint32_t engine, const std::byte* p);  // offset of p in the engine's HBM region
  uint32_t slots_total() const { return slots_.total(); }

  // The data plane (runtime/node_doors.hpp): loads read through the SNIC gate (the oracle's straight
  // from the store), copies through this node's endpoints.
  void reserve(uint32_t count, std::function<void(result<std::vector<uint32_t>>)> done) override;
  void load(std::vector<block_key> keys, std::function<void(load_result)> done, uint64_t request = 0) override;
  void release(const std::vector<uint32_t>& slots) override;
  void copy(std::vector<copy_op> ops, transport::traffic_class tc, std::function<void(status)> done) override;
  void persist(block_key key, block_key parent, const std::byte* payload, std::function<void()> done = {}) override;

  // Bytes (block file bytes) of the loads asked for and not yet released by the SNIC: queued or in flight
  // at the gate, or still waiting for DRAM slots.
  uint64_t read_q() const;
  read_queue_report take_read_report() override;
  node_io_stats stats() const;
  // Free KV bytes of each of this node's engines now, by local index (what a cancelled request must give back).
  std::vector<uint64_t> hbm_free() const;
  // read bytes and read_q of the SNIC every 20 ms since the node started (docs/design.md §15).
  std::vector<snic_sample> snic_samples() const { return sampler_.samples(); }
  uint32_t node() const { return options_.node; }
  // Node `node` was lost (docs/design.md §13): copies to its engines fail at once rather than hold this
  // node's endpoints until the transport's timeout.
  void node_lost(uint32_t node);
  // A lost node came back (docs/design.md §13) with these endpoints: copies to its engines go to them from
  // every command posted after this one.
  void node_rejoined(std::vector<endpoint_entry> entries);

 private:
  void run();
  // Every local endpoint's peer index for `engine`, reached at `address`.
  void connect_engine(uint32_t engine, const transport::address_bytes& address);
  // Starts a load once its slots are reserved (progress thread), along this node's block path.
  void start_load(std::vector<block_key> keys, load_result partial, std::function<void(load_result)> done);
  void post_command(std::function<void()> command);
  void read_started(uint64_t request);
  void read_finished(uint64_t request);

  node_io_options options_;
  storage::block_store& store_;
  uint64_t slot_stride_ = 0;
  // Registered memory comes from huge-page host buffers: shm copies through the kernel pin far fewer pages.
  std::unique_ptr<transport::host_buffer> buffer_memory_;
  std::vector<transport::host_buffer> hbm_memory_;
  std::vector<std::unique_ptr<gpu::hbm_arena>> hbm_;
  node_fabric fabric_;
  slot_pool slots_;
  // How blocks reach the buffer (block_path.hpp), as copies have a kv_mover. Declared after the memory it
  // reads into, so it is destroyed (waiting for reads in flight) first.
  std::unique_ptr<block_path> blocks_;
  std::unique_ptr<kv_mover> mover_;
  snic_sampler sampler_;  // sampled by the progress thread
  // Block copies waiting for the store, and write-backs answered when the SNIC would have sent them (both
  // declared before the writer, which uses them while it drains).
  copy_pool copies_;
  due_calls answers_;
  // Persists and the oracle's loads; destroyed (drained) first, before the block path and memory they use.
  // The oracle's block path holds it from construction on but posts to it only once the node runs.
  background_writer writer_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> commands_;  // run on the progress thread (endpoints are single-threaded)
  std::atomic<uint64_t> persisted_{0}, persist_errors_{0};
  std::atomic<uint64_t> persist_dropped_{0};  // blocks not queued: the queue was full
  std::atomic<uint64_t> waiting_bytes_{0};    // loads waiting for slots, not yet at the gate
  std::mutex reads_mutex_;
  std::unordered_map<uint64_t, uint32_t> reading_;  // request -> its loads not yet answered
  std::vector<uint64_t> read_done_;                 // requests whose loads all ended since the last report
  std::atomic<bool> stop_{false};
  bool stopped_ = false;  // stop() ran (under mutex_)
  std::thread thread_;
};

}  // namespace dualpath::runtime
