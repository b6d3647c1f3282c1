#pragma once
// The persistent KV block store (docs/design.md §9): Full Blocks as files in a POSIX directory (a local disk or
// a shared filesystem mount), keyed by chained prefix hashes (core/block_key.hpp). Reads are batched,
// asynchronous direct I/O through io_uring into caller buffers; writes are atomic (temp name, fsync,
// rename). A missing, truncated or corrupt block is a miss with a counted outcome, never served.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/block_key.hpp"
#include "core/status.hpp"
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

// How one block read ended (docs/design.md §9). What the store does with the block follows from the
// outcome alone: a corrupt or truncated file is removed so the block can be written again, a foreign
// one is left to its owner, and io_error and bad_request keep the block (the I/O or the request
// failed, not the block).
enum class read_outcome : uint8_t {
  ok,
  miss,         // no file under the block's name
  corrupt,      // a checksum or a header field is wrong
  foreign,      // a whole block of another model, layout or key under this name
  truncated,    // the file is shorter (or longer) than a block
  io_error,     // the OS failed the open or the read (EIO, ...), or the store shut down first
  bad_request,  // the request cannot be served at all (null or misaligned buffer, no such layer)
};

// Stable lower-case name ("ok", "miss", "io_error", ...), for logs and reports.
const char* outcome_name(read_outcome o);

struct read_completion {
  uint64_t user_data = 0;
  block_key key = 0;
  read_outcome outcome = read_outcome::miss;
  std::string message;                 // "" when ok, else "miss", "layer 3 checksum", "read error: ..."
  const std::byte* payload = nullptr;  // inside the caller buffer: [layers][tokens][bytes]; null unless ok
  uint64_t bytes_read = 0;             // bytes actually read from the file (0 for a miss)
  bool ok() const { return outcome == read_outcome::ok; }
};

using completion_callback = std::function<void(read_completion)>;

struct store_stats {
  uint64_t blocks = 0, bytes = 0;  // blocks indexed now and their file bytes
  uint64_t capacity_bytes = 0;
  uint64_t writes = 0, write_bytes = 0, write_errors = 0;
  uint64_t reads = 0, read_bytes = 0;  // completed good reads (submit + read_layer)
  uint64_t misses = 0;                 // absent blocks asked for
  uint64_t io_errors = 0;              // io_error and bad_request outcomes
  uint64_t corrupt = 0;                // corrupt and truncated outcomes (bad checksum, wrong size)
  uint64_t foreign = 0;                // another fingerprint / layout / key at this name
  uint64_t evictions = 0, removals = 0;
  uint64_t lookups = 0, lookup_hit_blocks = 0;
  bool direct_io = false;  // whether reads currently use O_DIRECT
  bool io_uring = false;   // false: blocking reads by a thread pool (io_uring unavailable)
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
  // keeps eviction hole-free. A block already stored is ok without a write. Failures are returned,
  // never thrown, and leave no partial file and every stored block in place: `io` with the OS error
  // text (ENOSPC, EROFS, EIO, ...), `capacity` when the block does not fit the store's capacity even
  // after eviction.
  virtual status write(block_key key, block_key parent, const std::byte* payload) = 0;
  // The same from one pointer per layer slice (format.layers of them, layer_bytes() each); `internal`
  // when another number of slices is given.
  virtual status write_layers(block_key key, block_key parent, const std::vector<const std::byte*>& layers) = 0;

  // Queues a batch of asynchronous reads. Each request yields exactly one completion, delivered to
  // `done` from the store's I/O thread (keep it short), or to poll() for the overload without it.
  // A read that fails for the block's sake (see read_outcome) drops that block from the index, so
  // lookups end before it ("a miss from that block on").
  virtual void submit(std::vector<read_request> batch) = 0;
  virtual void submit(std::vector<read_request> batch, completion_callback done) = 0;
  // Completions of submit(batch) so far; waits up to `wait` for the first one if there are none.
  virtual std::vector<read_completion> poll(std::chrono::milliseconds wait) = 0;

  // Reads and verifies one Layer Block (a contiguous slice) synchronously into `dst`
  // (format.layer_bytes() bytes), with the outcomes and their consequences of a block read:
  // `not_found` for a miss or a foreign block, `corrupt` for a bad checksum, header or size, `io` for
  // an OS error, `internal` for a layer out of range. The message is the read_completion's.
  virtual status read_layer(block_key key, uint32_t layer, std::byte* dst) = 0;

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
