#include "protocol/runtime_codec.hpp"

#include "protocol/field_codec.hpp"

namespace dualpath::protocol {

namespace {

struct times_fields {
  using T = turn_times;
  using S = schema::TurnTimes;
  static inline const auto all = std::make_tuple(
      DP_FIELD(submitted, Submitted), DP_FIELD(assigned, Assigned), DP_FIELD(kv_ready, KvReady),
      DP_FIELD(prefill_start, PrefillStart), DP_FIELD(first_token, FirstToken), DP_FIELD(second_token, SecondToken),
      DP_FIELD(done, Done), DP_FIELD(last_token, LastToken), DP_FIELD(handoff, Handoff), DP_FIELD(in_hbm, InHbm));
};

// Tokens and times are written by hand: a list and a nested struct.
struct payload_fields {
  using T = turn_payload;
  using S = schema::TurnPayload;
  static inline const auto all =
      std::make_tuple(DP_FIELD(request, Request), DP_FIELD(agent, Agent), DP_FIELD(turn, Turn), DP_FIELD(gen, Gen),
                      DP_FIELD(hit_blocks, HitBlocks), DP_FIELD(stream, Stream), DP_FIELD(temperature, Temperature),
                      DP_FIELD(top_p, TopP), DP_FIELD(seed, Seed));
};

struct handoff_fields {
  using T = handoff_info;
  using S = schema::Handoff;
  static inline const auto all = std::make_tuple(
      DP_FIELD(first_token, FirstToken), DP_FIELD(valid_hit_blocks, ValidHitBlocks), DP_FIELD(path, Path),
      DP_FIELD(corrupt_blocks, CorruptBlocks), DP_FIELD(kv_verified, KvVerified), DP_FIELD(kv_corrupt, KvCorrupt));
};

struct result_fields {
  using T = turn_result;
  using S = schema::TurnResult;
  static inline const auto all =
      std::make_tuple(DP_FIELD(request, Request), DP_FIELD(agent, Agent), DP_FIELD(turn, Turn), DP_FIELD(path, Path),
                      DP_FIELD(valid_hit_blocks, ValidHitBlocks), DP_FIELD(corrupt_blocks, CorruptBlocks),
                      DP_FIELD(kv_verified, KvVerified), DP_FIELD(kv_corrupt, KvCorrupt), DP_FIELD(error, Error),
                      DP_FIELD(prompt_tokens, PromptTokens), DP_FIELD(failure, Failure));
};

struct copy_op_fields {
  using T = runtime::copy_op;
  using S = schema::CopyOp;
  static inline const auto all =
      std::make_tuple(DP_FIELD(via, Via), DP_FIELD(src_kind, SrcKind), DP_FIELD(src_offset, SrcOffset),
                      DP_FIELD(dst_engine, DstEngine), DP_FIELD(dst_kind, DstKind), DP_FIELD(dst_offset, DstOffset),
                      DP_FIELD(length, Length), DP_FIELD(src_engine, SrcEngine));
};

void put_payload(schema::TurnPayload::Builder b, const turn_payload& x) {
  write_fields(b, x, payload_fields::all);
  put_list(b.initTokens(uint32_t(x.tokens.size())), x.tokens);
  put_list(b.initStopTokens(uint32_t(x.stop_tokens.size())), x.stop_tokens);
  write_fields(b.initTimes(), x.times, times_fields::all);
}

turn_payload get_payload(schema::TurnPayload::Reader r) {
  turn_payload x;
  read_fields(r, x, payload_fields::all);
  x.tokens = get_list<int32_t>(r.getTokens());
  x.stop_tokens = get_list<int32_t>(r.getStopTokens());
  read_fields(r.getTimes(), x.times, times_fields::all);
  return x;
}

}  // namespace

turn_result failed_turn(const turn_payload& p, std::string why, failure_kind kind) {
  turn_result r;
  r.request = p.request;
  r.agent = p.agent;
  r.turn = p.turn;
  r.times = p.times;
  r.error = std::move(why);
  r.failure = kind;
  return r;
}

envelope<schema::TurnPayload> encode(const turn_payload& x) {
  return build_envelope<schema::TurnPayload>([&](schema::TurnPayload::Builder b) { put_payload(b, x); });
}

turn_payload decode(const envelope<schema::TurnPayload>& e) { return read_envelope(e, get_payload); }

envelope<schema::Handoff> encode(const handoff_info& x) {
  return build_envelope<schema::Handoff>([&](schema::Handoff::Builder b) {
    put_payload(b.initPayload(), x.payload);
    put_list(b.initDeSlots(uint32_t(x.de_slots.size())), x.de_slots);
    write_fields(b, x, handoff_fields::all);
  });
}

handoff_info decode(const envelope<schema::Handoff>& e) {
  return read_envelope(e, [](schema::Handoff::Reader r) {
    handoff_info x;
    x.payload = get_payload(r.getPayload());
    x.de_slots = get_list<uint32_t>(r.getDeSlots());
    read_fields(r, x, handoff_fields::all);
    return x;
  });
}

envelope<schema::TurnTokens> encode(const turn_tokens& x) {
  return build_envelope<schema::TurnTokens>([&](schema::TurnTokens::Builder b) {
    b.setRequest(x.request);
    b.setFirst(x.first);
    put_list(b.initTokens(uint32_t(x.tokens.size())), x.tokens);
    b.setValidHitBlocks(x.valid_hit_blocks);
  });
}

turn_tokens decode(const envelope<schema::TurnTokens>& e) {
  return read_envelope(e, [](schema::TurnTokens::Reader r) {
    return turn_tokens{r.getRequest(), r.getFirst(), get_list<int32_t>(r.getTokens()), r.getValidHitBlocks()};
  });
}

envelope<schema::TurnResult> encode(const turn_result& x) {
  return build_envelope<schema::TurnResult>([&](schema::TurnResult::Builder b) {
    put_list(b.initGenerated(uint32_t(x.generated.size())), x.generated);
    write_fields(b.initTimes(), x.times, times_fields::all);
    write_fields(b, x, result_fields::all);
  });
}

turn_result decode(const envelope<schema::TurnResult>& e) {
  return read_envelope(e, [](schema::TurnResult::Reader r) {
    turn_result x;
    x.generated = get_list<int32_t>(r.getGenerated());
    read_fields(r.getTimes(), x.times, times_fields::all);
    read_fields(r, x, result_fields::all);
    return x;
  });
}

envelope<schema::LoadBlocks> encode_load(const std::vector<block_key>& keys, uint64_t request) {
  return build_envelope<schema::LoadBlocks>([&](schema::LoadBlocks::Builder b) {
    put_list(b.initKeys(uint32_t(keys.size())), keys);
    b.setRequest(request);
  });
}

uint64_t load_request(const envelope<schema::LoadBlocks>& e) {
  return read_envelope(e, [](schema::LoadBlocks::Reader r) { return r.getRequest(); });
}

std::vector<block_key> decode(const envelope<schema::LoadBlocks>& e) {
  return read_envelope(e, [](schema::LoadBlocks::Reader r) { return get_list<block_key>(r.getKeys()); });
}

envelope<schema::LoadResult> encode(const runtime::load_result& x) {
  return build_envelope<schema::LoadResult>([&](schema::LoadResult::Builder b) {
    put_list(b.initSlots(uint32_t(x.slots.size())), x.slots);
    b.setValid(x.valid);
    b.setBytes(x.bytes);
    b.setReason(x.status.message());
    b.setCode(uint8_t(x.status.code()));
  });
}

runtime::load_result decode(const envelope<schema::LoadResult>& e) {
  return read_envelope(e, [](schema::LoadResult::Reader r) {
    runtime::load_result x;
    x.slots = get_list<uint32_t>(r.getSlots());
    x.valid = r.getValid();
    x.bytes = r.getBytes();
    if (r.getCode() != 0) x.status = status(errc(r.getCode()), r.getReason().cStr());
    return x;
  });
}

envelope<schema::Slots> encode(const slot_list& x) {
  return build_envelope<schema::Slots>([&](schema::Slots::Builder b) {
    put_list(b.initSlots(uint32_t(x.slots.size())), x.slots);
    b.setCount(x.count);
  });
}

slot_list decode(const envelope<schema::Slots>& e) {
  return read_envelope(e, [](schema::Slots::Reader r) {
    return slot_list{get_list<uint32_t>(r.getSlots()), r.getCount()};
  });
}

envelope<schema::CopyBatch> encode(const copy_batch& x) {
  return build_envelope<schema::CopyBatch>([&](schema::CopyBatch::Builder b) {
    auto ops = b.initOps(uint32_t(x.ops.size()));
    for (size_t i = 0; i < x.ops.size(); ++i) write_fields(ops[uint32_t(i)], x.ops[i], copy_op_fields::all);
    b.setTrafficClass(to_schema(x.traffic));
  });
}

copy_batch decode(const envelope<schema::CopyBatch>& e) {
  return read_envelope(e, [](schema::CopyBatch::Reader r) {
    copy_batch x;
    x.traffic = from_schema(r.getTrafficClass());
    for (auto o : r.getOps()) {
      runtime::copy_op op;
      read_fields(o, op, copy_op_fields::all);
      x.ops.push_back(op);
    }
    return x;
  });
}

}  // namespace dualpath::protocol
