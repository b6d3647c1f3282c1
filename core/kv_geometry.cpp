#include "core/kv_geometry.hpp"

#include <xxhash.h>

#include <algorithm>

namespace dualpath {

kv_geometry kv_geometry_of(const model_spec& m, const cluster_config& c) {
  kv_geometry g;
  g.layers = m.layers;
  g.block_tokens = c.block_tokens ? c.block_tokens : m.block_tokens;
  g.bytes_per_token_layer = m.kv_bytes_per_token_layer;
  return g;
}

std::vector<token_run> token_runs(const kv_geometry& g, uint64_t begin, uint64_t end) {
  std::vector<token_run> runs;
  for (uint64_t pos = begin; pos < end;) {
    const uint32_t block = uint32_t(pos / g.block_tokens);
    const uint32_t in_block = uint32_t(pos % g.block_tokens);
    const uint32_t count = uint32_t(std::min<uint64_t>(end - pos, g.block_tokens - in_block));
    runs.push_back({block, in_block, pos, count});
    pos += count;
  }
  return runs;
}

uint64_t model_fingerprint(const std::string& model, backend_kind backend, uint64_t seed, const kv_geometry& g) {
  // The modeled backend's KV does not depend on weights; cpu and cuda may round differently.
  const std::string numerics = to_string(backend);
  const uint64_t weight_seed = backend == backend_kind::modeled ? 0 : seed;
  std::string text = model + "|" + numerics + "|" + std::to_string(weight_seed) + "|" + std::to_string(g.layers) + "|" +
                     std::to_string(g.block_tokens) + "|" + std::to_string(g.bytes_per_token_layer);
  return XXH3_64bits(text.data(), text.size());
}

}  // namespace dualpath
