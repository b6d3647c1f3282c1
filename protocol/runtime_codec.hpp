#pragma once
// Plain C++ views of the runtime protocol (schema/runtime.capnp) and their envelope codecs. Actors
// exchange envelopes; their logic works on these structs.
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/sampling.hpp"
#include "protocol/failure.hpp"
#include "runtime/node_io.hpp"
#include "protocol/type_ids.hpp"
#include "schedule/policy.hpp"
#include "transport/endpoint.hpp"

namespace dualpath::protocol {

struct turn_times {
  int64_t submitted = 0, assigned = 0, kv_ready = 0, prefill_start = 0, first_token = 0, second_token = 0, done = 0;
  int64_t last_token = 0;           // the last token generated; `done` is later by the wait for the write-back
  int64_t handoff = 0, in_hbm = 0;  // the DE received the hand-off; its KV in the DE's HBM
};

struct turn_payload {
  uint64_t request = 0;
  uint32_t agent = 0, turn = 0;
  std::vector<int32_t> tokens;  // the whole prompt
  uint32_t gen = 0;
  uint32_t hit_blocks = 0;
  turn_times times;
  bool stream = false;                 // tokens go to the client as they are made (turn_tokens)
  std::vector<int32_t> stop_tokens{};  // the turn ends after generating one of these
  float temperature = 0, top_p = 1;    // how its tokens are picked (gpu/sampling.hpp)
  uint64_t seed = 0;
  gpu::sampling sampling() const { return {temperature, top_p, seed}; }
};

// Generated tokens [first, first + tokens.size()) of a streamed turn.
struct turn_tokens {
  uint64_t request = 0;
  uint32_t first = 0;
  std::vector<int32_t> tokens;
  uint32_t valid_hit_blocks = 0;  // as turn_result's: the front end reports cached tokens before the end
};

struct handoff_info {
  turn_payload payload;
  int32_t first_token = -1;
  std::vector<uint32_t> de_slots;
  uint32_t valid_hit_blocks = 0;
  schedule::read_path path = schedule::read_path::pe;
  uint32_t corrupt_blocks = 0;
  uint64_t kv_verified = 0, kv_corrupt = 0;
};

struct turn_result {
  uint64_t request = 0;
  uint32_t agent = 0, turn = 0;
  std::vector<int32_t> generated;
  turn_times times;
  schedule::read_path path = schedule::read_path::pe;
  uint32_t valid_hit_blocks = 0, corrupt_blocks = 0;
  uint64_t kv_verified = 0, kv_corrupt = 0;
  std::string error;
  uint32_t prompt_tokens = 0;
  failure_kind failure = failure_kind::none;
};

struct slot_list {
  std::vector<uint32_t> slots;
  uint32_t count = 0;
};

struct copy_batch {
  std::vector<runtime::copy_op> ops;
  transport::traffic_class traffic = transport::traffic_class::kv;
};

// The answer to a turn that failed: who it was, how far it got, and why.
turn_result failed_turn(const turn_payload& p, std::string why, failure_kind kind = failure_kind::fatal);

envelope<schema::TurnPayload> encode(const turn_payload& x);
turn_payload decode(const envelope<schema::TurnPayload>& e);
envelope<schema::Handoff> encode(const handoff_info& x);
handoff_info decode(const envelope<schema::Handoff>& e);
envelope<schema::TurnTokens> encode(const turn_tokens& x);
turn_tokens decode(const envelope<schema::TurnTokens>& e);
envelope<schema::TurnResult> encode(const turn_result& x);
turn_result decode(const envelope<schema::TurnResult>& e);
// `request` (0: none) lets the node name the load in its leader's report (docs/design.md §7.1).
envelope<schema::LoadBlocks> encode_load(const std::vector<block_key>& keys, uint64_t request = 0);
std::vector<block_key> decode(const envelope<schema::LoadBlocks>& e);
uint64_t load_request(const envelope<schema::LoadBlocks>& e);
envelope<schema::LoadResult> encode(const runtime::load_result& x);
runtime::load_result decode(const envelope<schema::LoadResult>& e);
envelope<schema::Slots> encode(const slot_list& x);
slot_list decode(const envelope<schema::Slots>& e);
envelope<schema::CopyBatch> encode(const copy_batch& x);
copy_batch decode(const envelope<schema::CopyBatch>& e);

}  // namespace dualpath::protocol
