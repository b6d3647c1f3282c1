#pragma once
// The store's measured read rate (docs/design.md §7.1): what an uncapped SNIC can deliver, for α. A few probe
// blocks are written, read back in one batch as the SNIC gate reads (same queue depth, O_DIRECT where the
// store uses it, so the page cache does not flatter the number), timed, and removed again.
#include <cstdint>

#include "core/status.hpp"
#include "storage/block_store.hpp"

namespace dualpath::storage {

struct read_rate {
  double bytes_per_s = 0;
  uint64_t bytes = 0;  // read by the probe
  uint32_t blocks = 0;
  double seconds = 0;
};

// Reads about `target_bytes` (at least 8 blocks, at most 64) of probe blocks. An error when a probe block
// cannot be written or read back; the store is left as it was either way.
result<read_rate> measure_read_rate(block_store& store, uint64_t target_bytes = 32ull << 20);

}  // namespace dualpath::storage
