#include "protocol/runtime_codec.hpp"

#include "protocol/enum_codec.hpp"

namespace dualpath::actors {

namespace {

void put_times(schema::TurnTimes::Builder b, const turn_times& t) {
  b.setSubmitted(t.submitted);
  b.setAssigned(t.assigned);
  b.setKvReady(t.kv_ready);
  b.setPrefillStart(t.prefill_start);
  b.setFirstToken(t.first_token);
  b.setSecondToken(t.second_token);
  b.setDone(t.done);
}

turn_times get_times(schema::TurnTimes::Reader r) {
  return {r.getSubmitted(), r.getAssigned(), r.getKvReady(), r.getPrefillStart(), r.getFirstToken(),
          r.getSecondToken(), r.getDone()};
}

template <class T, class List>
void put_list(List list, const std::vector<T>& v) {
  for (size_t i = 0; i < v.size(); ++i) list.set(uint32_t(i), v[i]);
}

template <class T, class List>
std::vector<T> get_list(List list) {
  std::vector<T> v;
  v.reserve(list.size());
  for (auto x : list) v.push_back(T(x));
  return v;
}

void put_payload(schema::TurnPayload::Builder b, const turn_payload& x) {
  b.setRequest(x.request);
  b.setAgent(x.agent);
  b.setTurn(x.turn);
  put_list(b.initTokens(uint32_t(x.tokens.size())), x.tokens);
  b.setGen(x.gen);
  b.setHitBlocks(x.hit_blocks);
  put_times(b.initTimes(), x.times);
}

turn_payload get_payload(schema::TurnPayload::Reader r) {
  turn_payload x;
  x.request = r.getRequest();
  x.agent = r.getAgent();
  x.turn = r.getTurn();
  x.tokens = get_list<int32_t>(r.getTokens());
  x.gen = r.getGen();
  x.hit_blocks = r.getHitBlocks();
  x.times = get_times(r.getTimes());
  return x;
}

}  // namespace

turn_result failed_turn(const turn_payload& p, std::string why) {
  turn_result r;
  r.request = p.request;
  r.agent = p.agent;
  r.turn = p.turn;
  r.times = p.times;
  r.error = std::move(why);
  return r;
}

envelope<schema::TurnPayload> encode(const turn_payload& x) {
  capnp::MallocMessageBuilder m;
  put_payload(m.initRoot<schema::TurnPayload>(), x);
  return to_envelope<schema::TurnPayload>(m);
}

turn_payload decode(const envelope<schema::TurnPayload>& e) {
  envelope_reader<schema::TurnPayload> r(e);
  return get_payload(r.root());
}

envelope<schema::Handoff> encode(const handoff_info& x) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<schema::Handoff>();
  put_payload(b.initPayload(), x.payload);
  b.setFirstToken(x.first_token);
  put_list(b.initDeSlots(uint32_t(x.de_slots.size())), x.de_slots);
  b.setValidHitBlocks(x.valid_hit_blocks);
  b.setPath(to_schema(x.path));
  b.setCorruptBlocks(x.corrupt_blocks);
  b.setKvVerified(x.kv_verified);
  b.setKvCorrupt(x.kv_corrupt);
  return to_envelope<schema::Handoff>(m);
}

handoff_info decode(const envelope<schema::Handoff>& e) {
  envelope_reader<schema::Handoff> rd(e);
  auto r = rd.root();
  handoff_info x;
  x.payload = get_payload(r.getPayload());
  x.first_token = r.getFirstToken();
  x.de_slots = get_list<uint32_t>(r.getDeSlots());
  x.valid_hit_blocks = r.getValidHitBlocks();
  x.path = from_schema(r.getPath());
  x.corrupt_blocks = r.getCorruptBlocks();
  x.kv_verified = r.getKvVerified();
  x.kv_corrupt = r.getKvCorrupt();
  return x;
}

envelope<schema::TurnResult> encode(const turn_result& x) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<schema::TurnResult>();
  b.setRequest(x.request);
  b.setAgent(x.agent);
  b.setTurn(x.turn);
  put_list(b.initGenerated(uint32_t(x.generated.size())), x.generated);
  put_times(b.initTimes(), x.times);
  b.setPath(to_schema(x.path));
  b.setValidHitBlocks(x.valid_hit_blocks);
  b.setCorruptBlocks(x.corrupt_blocks);
  b.setKvVerified(x.kv_verified);
  b.setKvCorrupt(x.kv_corrupt);
  b.setError(x.error);
  b.setPromptTokens(x.prompt_tokens);
  return to_envelope<schema::TurnResult>(m);
}

turn_result decode(const envelope<schema::TurnResult>& e) {
  envelope_reader<schema::TurnResult> rd(e);
  auto r = rd.root();
  turn_result x;
  x.request = r.getRequest();
  x.agent = r.getAgent();
  x.turn = r.getTurn();
  x.generated = get_list<int32_t>(r.getGenerated());
  x.times = get_times(r.getTimes());
  x.path = from_schema(r.getPath());
  x.valid_hit_blocks = r.getValidHitBlocks();
  x.corrupt_blocks = r.getCorruptBlocks();
  x.kv_verified = r.getKvVerified();
  x.kv_corrupt = r.getKvCorrupt();
  x.error = r.getError();
  x.prompt_tokens = r.getPromptTokens();
  return x;
}

envelope<schema::LoadBlocks> encode_load(const std::vector<block_key>& keys) {
  capnp::MallocMessageBuilder m;
  put_list(m.initRoot<schema::LoadBlocks>().initKeys(uint32_t(keys.size())), keys);
  return to_envelope<schema::LoadBlocks>(m);
}

std::vector<block_key> decode(const envelope<schema::LoadBlocks>& e) {
  envelope_reader<schema::LoadBlocks> rd(e);
  return get_list<block_key>(rd.root().getKeys());
}

envelope<schema::LoadResult> encode(const runtime::load_result& x) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<schema::LoadResult>();
  put_list(b.initSlots(uint32_t(x.slots.size())), x.slots);
  b.setValid(x.valid);
  b.setBytes(x.bytes);
  b.setReason(x.status.message());
  b.setCode(uint8_t(x.status.code()));
  return to_envelope<schema::LoadResult>(m);
}

runtime::load_result decode(const envelope<schema::LoadResult>& e) {
  envelope_reader<schema::LoadResult> rd(e);
  auto r = rd.root();
  runtime::load_result x;
  x.slots = get_list<uint32_t>(r.getSlots());
  x.valid = r.getValid();
  x.bytes = r.getBytes();
  if (r.getCode() != 0) x.status = status(errc(r.getCode()), r.getReason().cStr());
  return x;
}

envelope<schema::Slots> encode(const slot_list& x) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<schema::Slots>();
  put_list(b.initSlots(uint32_t(x.slots.size())), x.slots);
  b.setCount(x.count);
  return to_envelope<schema::Slots>(m);
}

slot_list decode(const envelope<schema::Slots>& e) {
  envelope_reader<schema::Slots> rd(e);
  auto r = rd.root();
  return {get_list<uint32_t>(r.getSlots()), r.getCount()};
}

envelope<schema::CopyBatch> encode(const copy_batch& x) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<schema::CopyBatch>();
  auto ops = b.initOps(uint32_t(x.ops.size()));
  for (size_t i = 0; i < x.ops.size(); ++i) {
    const auto& op = x.ops[i];
    auto o = ops[uint32_t(i)];
    o.setVia(op.via);
    o.setSrcKind(to_schema(op.src_kind));
    o.setSrcOffset(op.src_offset);
    o.setDstEngine(op.dst_engine);
    o.setDstKind(to_schema(op.dst_kind));
    o.setDstOffset(op.dst_offset);
    o.setLength(op.length);
  }
  b.setTrafficClass(to_schema(x.traffic));
  return to_envelope<schema::CopyBatch>(m);
}

copy_batch decode(const envelope<schema::CopyBatch>& e) {
  envelope_reader<schema::CopyBatch> rd(e);
  auto r = rd.root();
  copy_batch x;
  x.traffic = from_schema(r.getTrafficClass());
  for (auto o : r.getOps()) {
    runtime::copy_op op;
    op.via = o.getVia();
    op.src_kind = from_schema(o.getSrcKind());
    op.src_offset = o.getSrcOffset();
    op.dst_engine = o.getDstEngine();
    op.dst_kind = from_schema(o.getDstKind());
    op.dst_offset = o.getDstOffset();
    op.length = o.getLength();
    x.ops.push_back(op);
  }
  return x;
}

}  // namespace dualpath::actors
