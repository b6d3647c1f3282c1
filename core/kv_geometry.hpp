#pragma once
// Where a request's KV lives, block by block and layer by layer. A Full Block is [layers][tokens][bytes]
// (docs/design.md §2), so layer l of block b is one contiguous Layer Block at l·layer_bytes inside the block, and a
// run of tokens of one layer inside one block is contiguous too. Pure arithmetic: no I/O. Shared by the
// runtime's data plane and the simulator, so both lay a request's KV out alike.
#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster_config.hpp"
#include "core/model_catalog.hpp"
#include "core/modes.hpp"

namespace dualpath {

struct kv_geometry {
  uint32_t layers = 0;
  uint32_t block_tokens = 0;
  uint64_t bytes_per_token_layer = 0;

  uint64_t layer_bytes() const { return uint64_t(block_tokens) * bytes_per_token_layer; }
  uint64_t block_bytes() const { return layer_bytes() * layers; }
  uint32_t blocks_for(uint64_t tokens) const { return uint32_t((tokens + block_tokens - 1) / block_tokens); }
  // Offset of (layer, token-in-block) inside a Full Block.
  uint64_t offset_in_block(uint32_t layer, uint32_t token_in_block) const {
    return layer * layer_bytes() + uint64_t(token_in_block) * bytes_per_token_layer;
  }
};

// A run of tokens [first, first+count) of one layer that sits contiguously inside block `block`.
struct token_run {
  uint32_t block = 0;           // block index within the request
  uint32_t token_in_block = 0;  // first token's offset inside the block
  uint64_t first = 0;           // absolute position of the first token
  uint32_t count = 0;
};

// The geometry of a run: the model's layers and KV bytes, the cluster file's block size (else the model's).
// The runtime (cluster/node_host.cpp) and the simulator both take it from here.
kv_geometry kv_geometry_of(const model_spec& m, const cluster_config& c);

// Splits positions [begin, end) into per-block runs.
std::vector<token_run> token_runs(const kv_geometry& g, uint64_t begin, uint64_t end);

// Model fingerprint for the store: blocks are only valid for the same model, backend numerics and weights.
uint64_t model_fingerprint(const std::string& model, backend_kind backend, uint64_t seed, const kv_geometry& g);

}  // namespace dualpath
