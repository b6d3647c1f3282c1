#pragma once
// How a node's Full Blocks travel between the store and its DRAM buffer (docs/design.md §4, §9, §7.7). Two
// strategies, picked once when the node is built (as its kv_mover is), so no data path asks which run it is:
//   snic  reads through the node's SNIC gate (its cap, its queue, the block files) and paces write-back at
//         the same cap;
//   dram  the zero-I/O bound (`oracle`): hit blocks are copied from the blocks this run persisted, kept in
//         memory, on the background thread; write-back is not paced.
// Not thread-safe on its own: load() and progress() run on the node's progress thread, persist() on its
// background writer.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "core/block_key.hpp"
#include "core/kv_geometry.hpp"
#include "runtime/background_writer.hpp"
#include "runtime/dram_blocks.hpp"
#include "runtime/kv_types.hpp"
#include "runtime/slot_pool.hpp"
#include "storage/block_store.hpp"

namespace dualpath::runtime {

struct block_path_stats {
  uint64_t snic_bytes = 0;        // bytes read through the SNIC
  uint64_t store_read_bytes = 0;  // bytes read from block files, by any way
  uint64_t snic_write_bytes = 0;  // write-back bytes through the SNIC (paced)
  uint64_t snic_reads = 0, read_failures = 0;
};

class block_path {
 public:
  using done_fn = std::function<void(load_result)>;
  virtual ~block_path() = default;

  // Reads block i of `keys` into the slot file buffer `files[i]` (slot i of `partial.slots`); `done`
  // answers once, on any thread, by `deadline` at the latest.
  virtual void load(std::vector<block_key> keys, std::vector<std::byte*> files, load_result partial, done_fn done,
                    std::chrono::steady_clock::time_point deadline) = 0;
  // Progress thread: answers finished and expired loads; slots of a load answered early come back to
  // `slots` once nothing writes them. True when anything moved.
  virtual bool progress(slot_pool& slots) = 0;
  // No load is in flight.
  virtual bool idle() const = 0;
  // Caller's thread, before the write-back is queued: the oracle keeps a copy of the block's `bytes`, so a
  // load that finds it indexed finds it in memory too.
  virtual void keep(block_key key, const std::byte* payload, uint64_t bytes) = 0;
  // Background writer, as each block is written: when the SNIC would have sent it (its write pacing; now
  // when writes are not paced). The write is answered then; the block goes to the store at once.
  virtual std::chrono::steady_clock::time_point reserve_write() = 0;
  // Bytes asked for and not yet released by the SNIC (0 for the oracle's memory).
  virtual uint64_t read_q() const = 0;
  virtual block_path_stats stats() const = 0;
  // Waits up to `wait` for reads still running; false if some still write into the buffer.
  virtual bool quiesce(std::chrono::milliseconds wait) = 0;
};

// Through the SNIC gate at `snic_gb_per_s` (0: uncapped), reading and writing `store`.
std::unique_ptr<block_path> make_snic_path(storage::block_store& store, double snic_gb_per_s);
// From `dram` (shared by every node of the run), on `writer`; a block missing there is read from its file.
std::unique_ptr<block_path> make_dram_path(storage::block_store& store, const kv_geometry& g,
                                           std::shared_ptr<dram_blocks> dram, background_writer& writer);

}  // namespace dualpath::runtime
