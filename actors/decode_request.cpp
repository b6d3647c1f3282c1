#include "actors/decode_request.hpp"

#include <algorithm>
#include <cstring>

#include "gpu/backend.hpp"

namespace dualpath::actors {

bool turn_over(const de_request& r) {
  const auto& stops = r.info.payload.stop_tokens;
  return r.generated.size() >= r.info.payload.gen ||
         std::find(stops.begin(), stops.end(), r.generated.back()) != stops.end();
}

std::vector<uint64_t> page_offsets(const de_request& r) {
  std::vector<uint64_t> out;
  out.reserve(r.pages.size());
  for (const auto& p : r.pages) out.push_back(p.offset);
  return out;
}

void verify_arrived(de_request& r, const kv_geometry& g) {
  for (uint32_t b = 0; b < g.blocks_for(r.position); ++b) {
    const uint32_t first = b * g.block_tokens;
    const uint32_t count = std::min(g.block_tokens, r.position - first);
    for (uint32_t l = 0; l < g.layers; ++l) {
      ++r.info.kv_verified;
      if (!gpu::modeled_kv_matches(l, first, r.sequence.data() + first, count,
                                   r.pages.at(b).data + g.offset_in_block(l, 0), uint32_t(g.bytes_per_token_layer)))
        ++r.info.kv_corrupt;
    }
  }
}

void key_full_blocks(de_request& r, const kv_geometry& g) {
  extend_block_keys(r.keys, r.sequence.data(), r.position, g.block_tokens);
}

void extend_spans(de_request& r, const kv_geometry& g) {
  if (r.spans.size() != g.layers) {  // first step, or the last step's spans were not given back
    r.spans.assign(g.layers, {});
    r.spans_tokens = 0;
  }
  while (r.spans_tokens < r.position) {
    const uint32_t block = r.spans_tokens / g.block_tokens, in_block = r.spans_tokens % g.block_tokens;
    const uint32_t add = std::min<uint32_t>(g.block_tokens - in_block, r.position - r.spans_tokens);
    for (uint32_t l = 0; l < g.layers; ++l) {
      if (in_block > 0) r.spans[l].back().tokens += add;
      else r.spans[l].push_back({r.pages.at(block).data + g.offset_in_block(l, 0), add});
    }
    r.spans_tokens += add;
  }
}

void append_token_kv(de_request& r, const kv_geometry& g, const std::byte* new_kv) {
  const uint32_t block = r.position / g.block_tokens, in_block = r.position % g.block_tokens;
  for (uint32_t l = 0; l < g.layers; ++l)
    std::memcpy(r.pages.at(block).data + g.offset_in_block(l, in_block), new_kv + l * g.bytes_per_token_layer,
                g.bytes_per_token_layer);
  r.position++;
}

turn_result result_of(const de_request& r, int64_t now_ns) {
  turn_result res;
  res.request = r.info.payload.request;
  res.agent = r.info.payload.agent;
  res.turn = r.info.payload.turn;
  res.generated = r.generated;
  res.times = r.info.payload.times;
  res.times.done = res.times.last_token = now_ns;
  res.path = r.info.path;
  res.valid_hit_blocks = r.info.valid_hit_blocks;
  res.corrupt_blocks = r.info.corrupt_blocks;
  res.kv_verified = r.info.kv_verified;
  res.kv_corrupt = r.info.kv_corrupt;
  res.prompt_tokens = uint32_t(r.info.payload.tokens.size());
  return res;
}

}  // namespace dualpath::actors
