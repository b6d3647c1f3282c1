// The envelope harnesses: every decode() of protocol/*_codec.hpp, fed the raw bytes a peer could send in
// an envelope (CAF hands the receiver exactly these bytes, docs/design.md §13). The documented refusal is
// kj::Exception (protocol/type_ids.hpp, envelope_reader), which a receiving handler answers with an error.
#include <kj/exception.h>

#include "protocol/deployment_codec.hpp"
#include "protocol/runtime_codec.hpp"
#include "protocol/scheduler_codec.hpp"
#include "tests/fuzz/harnesses.hpp"

namespace dualpath::fuzz {

namespace {

// Keeps a decoded value observable, so no part of a decode is optimised away.
volatile uint64_t sink = 0;
void use(uint64_t v) { sink = sink + v; }

template <class Schema, class Use>
int decode_envelope(const uint8_t* data, size_t size, Use&& on_value) {
  protocol::envelope<Schema> e{std::vector<uint8_t>(data, data + size)};
  try {
    on_value(protocol::decode(e));
    return accepted;
  } catch (const kj::Exception&) {
    return refused;
  }
}

void use_snapshot(const schedule::node_snapshot& n) {
  use(n.node + uint64_t(n.kind) + n.read_q + n.engines.size());
  for (const auto& e : n.engines) use(e.engine + e.node + e.seq + e.tok + e.free_hbm);
}

void use_payload(const protocol::turn_payload& p) {
  use(p.request + p.agent + p.turn + p.tokens.size() + p.gen + p.hit_blocks + uint64_t(p.times.done));
}

}  // namespace

int fuzz_request(const uint8_t* data, size_t size) {
  return decode_envelope<schema::Request>(data, size, [](const schedule::request_info& r) { use(r.id + r.len); });
}

int fuzz_group_report(const uint8_t* data, size_t size) {
  return decode_envelope<schema::GroupReport>(data, size, [](const schedule::group_report& r) {
    use_snapshot(r.node);
    for (const auto& ids : r.acked) use(ids.size());
    use(r.read_acked.size());
  });
}

int fuzz_fetch(const uint8_t* data, size_t size) {
  return decode_envelope<schema::Fetch>(data, size, [](uint32_t node) { use(node); });
}

int fuzz_assignments(const uint8_t* data, size_t size) {
  return decode_envelope<schema::Assignments>(data, size, [](const std::vector<schedule::assignment>& list) {
    for (const auto& a : list) use(a.request.id + a.pe + a.de + uint64_t(a.path) + a.pe_blocks);
  });
}

int fuzz_policy_status(const uint8_t* data, size_t size) {
  return decode_envelope<schema::PolicyStatus>(data, size, [](const protocol::policy_status& s) {
    use(s.ok + s.active.size() + s.known.size() + s.message.size());
  });
}

int fuzz_scheduler_stats(const uint8_t* data, size_t size) {
  return decode_envelope<schema::SchedulerStats>(data, size, [](const protocol::scheduler_counters& c) {
    use(c.policy.size() + c.waiting + c.submitted + c.refused_commands);
  });
}

int fuzz_turn_payload(const uint8_t* data, size_t size) {
  return decode_envelope<schema::TurnPayload>(data, size, use_payload);
}

int fuzz_handoff(const uint8_t* data, size_t size) {
  return decode_envelope<schema::Handoff>(data, size, [](const protocol::handoff_info& h) {
    use_payload(h.payload);
    use(h.de_slots.size() + uint64_t(h.path) + h.kv_verified);
  });
}

int fuzz_turn_result(const uint8_t* data, size_t size) {
  return decode_envelope<schema::TurnResult>(data, size, [](const protocol::turn_result& r) {
    use(r.request + r.generated.size() + uint64_t(r.path) + r.error.size() + r.prompt_tokens);
  });
}

int fuzz_load_blocks(const uint8_t* data, size_t size) {
  protocol::envelope<schema::LoadBlocks> e{std::vector<uint8_t>(data, data + size)};
  try {
    use(protocol::decode(e).size());
    use(protocol::load_request(e));  // the data plane reads both from one envelope
    return accepted;
  } catch (const kj::Exception&) {
    return refused;
  }
}

int fuzz_load_result(const uint8_t* data, size_t size) {
  return decode_envelope<schema::LoadResult>(data, size, [](const runtime::load_result& r) {
    // A receiver logs the status: its text must be buildable for any code a peer sends.
    use(r.slots.size() + r.valid + r.bytes + r.status.to_string().size());
  });
}

int fuzz_slots(const uint8_t* data, size_t size) {
  return decode_envelope<schema::Slots>(data, size,
                                        [](const protocol::slot_list& s) { use(s.slots.size() + s.count); });
}

int fuzz_copy_batch(const uint8_t* data, size_t size) {
  return decode_envelope<schema::CopyBatch>(data, size, [](const protocol::copy_batch& b) {
    use(uint64_t(b.traffic) + b.ops.size());
    for (const auto& o : b.ops) use(o.via + uint64_t(o.src_kind) + o.dst_engine + o.length);
  });
}

int fuzz_node_setup(const uint8_t* data, size_t size) {
  return decode_envelope<schema::NodeSetup>(
      data, size, [](const std::pair<std::string, std::string>& s) { use(s.first.size() + s.second.size()); });
}

int fuzz_fabric_directory(const uint8_t* data, size_t size) {
  return decode_envelope<schema::FabricDirectory>(data, size, [](const std::vector<runtime::endpoint_entry>& list) {
    for (const auto& e : list) use(e.engine + e.node + e.address.size() + e.buffer.length + e.hbm.key);
  });
}

int fuzz_node_counters(const uint8_t* data, size_t size) {
  return decode_envelope<schema::NodeCounters>(
      data, size, [](const protocol::node_counters& c) { use(c.node + c.snic_bytes + c.snic_samples.size()); });
}

}  // namespace dualpath::fuzz
