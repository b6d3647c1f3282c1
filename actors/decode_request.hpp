#pragma once
// A request on a decode engine and the bookkeeping of its KV in HBM: the pages that hold it, the spans a decode
// step reads, the chain keys of its Full Blocks, and its answer. Plain functions of the request and the KV
// geometry, so the decode engine's actor (decode_engine.cpp) keeps to its messages.
#include <cstdint>
#include <vector>

#include "actors/vocabulary.hpp"
#include "core/block_key.hpp"
#include "core/kv_geometry.hpp"
#include "gpu/backend.hpp"
#include "gpu/hbm_arena.hpp"
#include "protocol/runtime_codec.hpp"

namespace dualpath::actors {

struct de_request {
  handoff_info info;
  std::vector<gpu::hbm_allocation> pages;  // a page per Full Block of prompt + generation, [layer][token][bytes]
  std::vector<int32_t> sequence;           // prompt + generated tokens
  std::vector<block_key> keys;             // chain keys of the blocks persisted or known so far
  uint32_t position = 0;                   // tokens whose KV is in HBM
  std::vector<int32_t> generated;
  uint32_t persisted_upto = 0;  // blocks [0, persisted_upto) are in storage
  // Per layer, a span per page over the first `spans_tokens` tokens: kept from step to step (lent to the step
  // in flight) and extended, since building them anew cost about a millisecond of the engine's thread a step
  // at 24 requests of 61 layers.
  std::vector<std::vector<gpu::kv_span>> spans;
  uint32_t spans_tokens = 0;
};

// Whether the turn is over: every token asked for, or one of its stop tokens made.
bool turn_over(const de_request& r);

// The HBM offsets of the request's pages, in block order (where its hand-off's slots are copied to).
std::vector<uint64_t> page_offsets(const de_request& r);

// Modeled backend: checks every prompt Layer Block in HBM against the bytes its tokens imply, counting into
// r.info.kv_verified and kv_corrupt.
void verify_arrived(de_request& r, const kv_geometry& g);

// Chain keys for every Full Block up to r.position (r.keys grows to that many).
void key_full_blocks(de_request& r, const kv_geometry& g);

// Brings r.spans up to r.position tokens: the last page's span grows, a new page gets its own span.
void extend_spans(de_request& r, const kv_geometry& g);

// The KV a decode step made for the fed token (`layers` rows of bytes_per_token_layer) into its block, layer
// by layer; the request then holds one token more.
void append_token_kv(de_request& r, const kv_geometry& g, const std::byte* new_kv);

// The turn's answer as the agent client receives it (its times up to now).
turn_result result_of(const de_request& r, int64_t now_ns);

}  // namespace dualpath::actors
