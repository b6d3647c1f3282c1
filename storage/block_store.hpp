#pragma once
// The persistent KV block store (DESIGN §9): Full Blocks as files in a POSIX directory (a local disk or
// a shared filesystem mount), keyed by chained prefix hashes (core/block_key.hpp). Reads are batched,
// asynchronous direct I/O through io_uring into caller buffers; writes are atomic (temp name, fsync,
// rename). A missing, truncated or corrupt block is a miss with a counted reason, never served.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/block_key.hpp"
#include "storage/block_format.hpp"

namespace dualpath::storage {

struct store_options {
  std::string dir;              // created if missing
  block_format format;          // what this store serves and writes
  uint64_t capacity_bytes = 0;  // 0 = unlimited; else LRU eviction from the ends of chains
  uint32_t queue_depth = 32;    // io_uring reads in flight at most
  bool fsync = true;            // fsync the block file and its directory before/after the rename
  bool direct_io = true;        // O_DIRECT where the filesystem allows it (tmpfs does not: buffered)
};

struct read_request {
  block_key key = 0;
  std::byte* buffer = nullptr;  // caller-owned, aligned to block_alignment, >= read_buffer_bytes()
  uint64_t user_data = 0;
};

struct read_completion {
  uint64_t user_data = 0;
  block_key key = 0;
  bool ok = false;
  std::string reason;                // "" when ok, else "miss", "corrupt: layer 3 checksum", ...
  const std::byte* payload = nullptr;  // inside the caller buffer: [layers][tokens][bytes]; null unless ok
  uint64_t bytes_read = 0;           // bytes actually read from the file (0 for a miss)
};

using completion_callback = std::function<void(read_completion)>;

struct write_result {
  bool ok = false;
  bool already_present = false;  // a valid block was already there; nothing written
  std::string reason;            // "" when ok, else e.g. "No space left on device (writing <file>)"
  int error = 0;                 // errno of the failure, 0 if none
};

struct store_stats {
  uint64_t blocks = 0, bytes = 0;  // blocks indexed now and their file bytes
  uint64_t capacity_bytes = 0;
  uint64_t writes = 0, write_bytes = 0, write_errors = 0;
  uint64_t reads = 0, read_bytes = 0;  // completed good reads (submit + read_layer)
  uint64_t misses = 0;                 // absent blocks asked for
  uint64_t io_errors = 0;              // reads failed by the OS (EIO, ...) or cancelled at shutdown
  uint64_t corrupt = 0;                // bad checksum, truncated, wrong size
  uint64_t foreign = 0;                // another fingerprint / layout / key at this name
  uint64_t evictions = 0, removals = 0;
  uint64_t lookups = 0, lookup_hit_blocks = 0;
  bool direct_io = false;              // whether reads currently use O_DIRECT
  bool io_uring = false;               // false: blocking reads by a thread pool (io_uring unavailable)
};

// Lifetime: a store must outlive the snic_gates in front of it; destroying it waits for reads in flight.
class block_store {
 public:
  // Opens (creating if needed) the store directory and rebuilds the index by scanning it.
  // Throws user_error when the directory cannot be created or written, or the format is invalid.
  static std::unique_ptr<block_store> open(const store_options& options);
  virtual ~block_store() = default;

  virtual const store_options& options() const = 0;
  // Bytes one read needs in the caller buffer (header + payload, padded to block_alignment).
  virtual uint64_t read_buffer_bytes() const = 0;
  // Offset of the payload inside a read buffer.
  virtual uint64_t payload_offset() const = 0;

  // How many leading keys of `chain` are present (longest-prefix match). Touches them in the LRU.
  // A key absent from the index is looked up on disk too (another process may have written it).
  virtual size_t lookup(const std::vector<block_key>& chain) = 0;
  virtual bool contains(block_key key) = 0;

  // Writes a Full Block atomically. `parent` is the previous key of its chain (0 for the first): it
  // keeps eviction hole-free. Errors (disk full, permissions, capacity) are reported, never thrown.
  virtual write_result write(block_key key, block_key parent, const std::byte* payload) = 0;
  // The same from one pointer per layer slice (format.layers of them, layer_bytes() each).
  virtual write_result write_layers(block_key key, block_key parent, const std::vector<const std::byte*>& layers) = 0;

  // Queues a batch of asynchronous reads. Each request yields exactly one completion, delivered to
  // `done` from the store's I/O thread (keep it short), or to poll() for the overload without it.
  // A failed read drops that block from the index, so lookups end before it ("a miss from that block
  // on"); a corrupt file is deleted so the block can be written again.
  virtual void submit(std::vector<read_request> batch) = 0;
  virtual void submit(std::vector<read_request> batch, completion_callback done) = 0;
  // Completions of submit(batch) so far; waits up to `wait` for the first one if there are none.
  virtual std::vector<read_completion> poll(std::chrono::milliseconds wait) = 0;

  // Reads and verifies one Layer Block (a contiguous slice) synchronously into `dst`
  // (format.layer_bytes() bytes). False with `*reason` on a miss or bad checksum.
  virtual bool read_layer(block_key key, uint32_t layer, std::byte* dst, std::string* reason) = 0;

  // Removes a block and every block that chains from it (no holes). False if it was absent.
  virtual bool remove(block_key key) = 0;
  virtual store_stats stats() const = 0;
};

// Allocates a buffer aligned for O_DIRECT reads; freed by the deleter.
struct aligned_free {
  void operator()(std::byte* p) const;
};
using aligned_buffer = std::unique_ptr<std::byte[], aligned_free>;
aligned_buffer make_aligned_buffer(uint64_t bytes);

}  // namespace dualpath::storage
