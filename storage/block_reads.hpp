#pragma once
// Synchronous reads of block files that judge what they find (docs/design.md §9): a header, one layer
// slice, the scan of a store directory at open. Each judgement is made where the fault shows (the open,
// the read, the format check) and carried as an outcome, so no caller parses a message. Internal to
// the store: none of this touches its index or its stats.
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "storage/block_files.hpp"
#include "storage/block_format.hpp"
#include "storage/block_store.hpp"

namespace dualpath::storage {

struct read_verdict {
  read_outcome outcome = read_outcome::ok;
  std::string message;  // "" when ok
  bool ok() const { return outcome == read_outcome::ok; }
};

read_verdict verdict_of(const block_check& check);
// An errno from an open or a read: ENOENT is a miss, anything else an I/O error.
read_verdict os_error_verdict(int error);
// The status code a caller of read_layer sees for an outcome.
errc outcome_code(read_outcome o);

// Opens the block file at `path` and checks its header against `format` and `key`, and its size
// against format.file_bytes(). `*header` and `*id` (if given) describe the version that was judged.
read_verdict read_header(const std::string& path, const block_format& format, block_key key, block_header* header,
                         file_id* id = nullptr);

// The header as above, then layer `layer` into `dst` (format.layer_bytes()) with its checksum checked,
// both from one open file, so a block replaced in between cannot pair one version's header with
// another's slice.
read_verdict read_layer_file(const std::string& path, const block_format& format, block_key key, uint32_t layer,
                             std::byte* dst, file_id* id);

struct found_block {
  block_key key = 0, parent = 0;
  uint64_t bytes = 0;
  int64_t mtime_ns = 0;
};

// Every block under the store directory `dir` that may be indexed, oldest first. Temporary files older
// than `stale_temp_seconds` are left over from crashed writers and removed; other files named like
// blocks that fail their check are logged and counted in `*skipped`.
std::vector<found_block> scan_blocks(const std::string& dir, const block_format& format, int stale_temp_seconds,
                                     uint64_t* skipped);

}  // namespace dualpath::storage
