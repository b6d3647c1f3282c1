#pragma once
// The emulated storage NIC of one node (docs/design.md §9): a FIFO of pending block reads in front of a
// block_store, with an optional rate cap in GB/s. Its queued bytes (`read_q`) are what the scheduler
// balances on. An internal thread drains the FIFO, so callers only submit and poll.
// The cap is a token bucket over the bytes actually read: tokens accrue at the cap up to a depth of
// 100 ms of the cap (at least one block) and the bucket starts empty whenever the link was idle, so
// from the start of a busy period no more than cap x elapsed time bytes are ever delivered; the depth
// only lets the link catch up after a stall of the storage underneath. A read is released to poll()
// once its data has arrived from the store and the bucket holds its bytes.
// Reads are dispatched to the store in FIFO order; completions of reads in flight together may
// come back in another order.
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "storage/block_store.hpp"

namespace dualpath::storage {

struct gate_stats {
  uint64_t reads = 0;       // completions delivered
  uint64_t failed = 0;      // of which not ok (miss, corrupt, ...)
  uint64_t bytes_read = 0;  // bytes actually read (what the cap is charged for)
  uint64_t busy_ns = 0;     // time with at least one read queued or in flight
  uint64_t max_read_q = 0;  // peak of read_q
  double cap_gb_per_s = 0;  // 0 = uncapped
};

class snic_gate {
 public:
  // `cap_gb_per_s` (1 GB = 1e9 bytes) limits delivered bytes per second; 0 = as fast as the store.
  // `depth`: reads this gate keeps in flight at the store (its share of the store's queue).
  snic_gate(block_store& store, double cap_gb_per_s, uint32_t depth = 32);
  ~snic_gate();  // quiesce(10 s); undelivered completions are dropped

  // Stops dispatching and waits up to `wait` for the reads already at the store; true when none is left,
  // so the buffers they were reading into may be freed. Idempotent.
  bool quiesce(std::chrono::milliseconds wait);
  snic_gate(const snic_gate&) = delete;
  snic_gate& operator=(const snic_gate&) = delete;

  // Queues reads in FIFO order; read_q grows by the file bytes of each request at once.
  void submit(const std::vector<read_request>& batch);  // read_request is a few words: copied
  // Bytes (block file bytes per request) queued or in flight at this emulated NIC: a read leaves
  // read_q when the NIC releases it to poll(). Exact; safe to call from any thread.
  uint64_t read_q() const;
  // Completions delivered so far (in the order the capped link releases them); waits at most `wait`.
  std::vector<read_completion> poll(std::chrono::milliseconds wait);
  // Number of requests submitted and not yet returned by poll().
  uint64_t pending() const;
  gate_stats stats() const;

 private:
  struct impl;
  std::shared_ptr<impl> impl_;  // shared with the store's completion callbacks
};

}  // namespace dualpath::storage
