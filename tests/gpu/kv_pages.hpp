#pragma once
// Test helper: a request's KV kept as Full Blocks ([layers][block_tokens][bytes]), handed to backends as
// per-layer spans over the Layer Blocks, the way the engine pages KV in HBM.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "gpu/backend.hpp"

namespace testkv {

using namespace dualpath;
using namespace dualpath::gpu;

struct paged_kv {
  explicit paged_kv(const model_spec& spec)
      : m(spec), layers(spec.layers), bt(spec.block_tokens), bpt(spec.kv_bytes_per_token_layer) {}
  model_spec m;
  uint32_t layers, bt;
  uint64_t bpt;
  std::vector<std::vector<std::byte>> blocks;

  std::byte* slot(uint32_t layer, uint32_t pos) {
    while (blocks.size() <= pos / bt) blocks.emplace_back(uint64_t(layers) * bt * bpt);
    return blocks[pos / bt].data() + (uint64_t(layer) * bt + pos % bt) * bpt;
  }
  std::vector<kv_span> spans(uint32_t layer, uint32_t tokens) {
    std::vector<kv_span> out;
    for (uint32_t p = 0; p < tokens; p += bt) {
      slot(layer, p);
      out.push_back(layer_block(blocks[p / bt].data(), m, layer, std::min(bt, tokens - p)));
    }
    return out;
  }
  void store(uint32_t layer, uint32_t pos0, const std::byte* data, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) std::memcpy(slot(layer, pos0 + i), data + i * bpt, bpt);
  }
};

struct request {
  paged_kv* kv;
  uint32_t cached;
  std::vector<int32_t> tokens;
  bool emit = true;
  std::vector<float> logits;
};

// One layer-wise prefill pass over a batch; stores each request's new KV back into its pages.
inline std::vector<int32_t> prefill(compute_backend& be, std::vector<request*> reqs) {
  std::vector<prefill_item> items;
  for (size_t r = 0; r < reqs.size(); ++r)
    items.push_back({r, reqs[r]->cached, reqs[r]->tokens, reqs[r]->emit, &reqs[r]->logits});
  auto pass = be.begin_prefill(items);
  const auto& m = be.model();
  std::vector<std::vector<std::byte>> out(reqs.size());
  for (uint32_t l = 0; l < m.layers; ++l) {
    std::vector<std::vector<kv_span>> cached;
    std::vector<std::byte*> ptrs;
    for (size_t r = 0; r < reqs.size(); ++r) {
      cached.push_back(reqs[r]->kv->spans(l, reqs[r]->cached));
      out[r].assign(reqs[r]->tokens.size() * m.kv_bytes_per_token_layer, std::byte{0});
      ptrs.push_back(out[r].data());
    }
    pass->run_layer(l, cached, ptrs);
    for (size_t r = 0; r < reqs.size(); ++r)
      reqs[r]->kv->store(l, reqs[r]->cached, out[r].data(), uint32_t(reqs[r]->tokens.size()));
  }
  return pass->finish();
}

// One decode step of `token` at `position` for each request; stores the new KV.
inline std::vector<int32_t> decode(compute_backend& be, std::vector<paged_kv*> kvs, std::vector<int32_t> tokens,
                                   std::vector<uint32_t> positions, std::vector<std::vector<float>>* logits = nullptr) {
  const auto& m = be.model();
  std::vector<std::vector<std::byte>> out(kvs.size(), std::vector<std::byte>(m.layers * m.kv_bytes_per_token_layer));
  std::vector<decode_item> items(kvs.size());
  if (logits) logits->resize(kvs.size());
  for (size_t r = 0; r < kvs.size(); ++r) {
    items[r].request_id = r;
    items[r].token = tokens[r];
    items[r].position = positions[r];
    for (uint32_t l = 0; l < m.layers; ++l) items[r].kv.push_back(kvs[r]->spans(l, positions[r]));
    items[r].new_kv = out[r].data();
    items[r].logits = logits ? &(*logits)[r] : nullptr;
  }
  auto next = be.decode_step(items);
  for (size_t r = 0; r < kvs.size(); ++r)
    for (uint32_t l = 0; l < m.layers; ++l)
      kvs[r]->store(l, positions[r], out[r].data() + l * m.kv_bytes_per_token_layer, 1);
  return next;
}

// max |a-b| / max |b|: the relative logit error the issue bounds by 1e-3.
inline double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    num = std::max(num, double(std::abs(a[i] - b[i])));
    den = std::max(den, double(std::abs(b[i])));
  }
  return a.size() != b.size() || den == 0 ? 1e9 : num / den;
}

inline std::vector<int32_t> random_tokens(uint32_t n, uint32_t vocab, uint64_t seed) {
  std::vector<int32_t> t(n);
  for (uint32_t i = 0; i < n; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    t[i] = int32_t((seed >> 33) % vocab);
  }
  return t;
}

}  // namespace testkv
