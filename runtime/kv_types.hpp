#pragma once
// The vocabulary of a node's data plane (docs/design.md §4): the regions KV moves between, a copy, the
// directory of every engine's CNIC, and what a load of Full Blocks returns.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.hpp"
#include "transport/endpoint.hpp"

namespace dualpath::runtime {

enum class region_kind : uint8_t { buffer, hbm };

// What every peer needs to reach one engine's CNIC: its address and its two registered regions.
struct endpoint_entry {
  uint32_t engine = 0;
  uint32_t node = 0;
  transport::address_bytes address;
  transport::remote_region buffer;   // the node's DRAM buffer as registered at this endpoint
  transport::remote_region hbm;      // the engine's HBM arena
  std::byte* buffer_base = nullptr;  // local addresses, used only by the in-process I/O bypass (oracle)
  std::byte* hbm_base = nullptr;
};
using fabric_directory = std::vector<endpoint_entry>;  // indexed by global engine id

// One copy: [src_offset, +length) of a local region at endpoint `via` (a global engine id on this node)
// to [dst_offset, +length) of region `dst_kind` at engine `dst_engine` (any node; `via` itself = loopback).
struct copy_op {
  static constexpr uint32_t none = UINT32_MAX;
  uint32_t via = 0;
  region_kind src_kind = region_kind::buffer;
  uint64_t src_offset = 0;
  uint32_t dst_engine = 0;
  region_kind dst_kind = region_kind::hbm;
  uint64_t dst_offset = 0;
  uint64_t length = 0;
  // A pull (docs/design.md §4, `de_fetch = "pull"`): `via` reads [src_offset, +length) of engine
  // `src_engine`'s region (another node's) into its own node's region at `dst_engine` (= via). `none`: a push.
  uint32_t src_engine = none;
  bool pull() const { return src_engine != none; }
};

struct load_result {
  std::vector<uint32_t> slots;  // one per requested key, in order
  uint32_t valid = 0;           // leading blocks that arrived intact (a miss from the first bad one on)
  uint64_t bytes = 0;           // bytes read through the SNIC
  dualpath::status status;      // why the first bad block is bad (ok if all arrived)
};

}  // namespace dualpath::runtime
