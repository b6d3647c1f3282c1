// The protocol codecs: every field survives a round trip and lands in the schema field of its name.
// Every value is distinct, so a field that is dropped or swapped on either side is noticed.
#include <doctest/doctest.h>

#include <tuple>

#include "protocol/deployment_codec.hpp"
#include "protocol/runtime_codec.hpp"
#include "protocol/scheduler_codec.hpp"
#include "schema/runtime.capnp.h"
#include "schema/scheduler.capnp.h"

using namespace dualpath;
using namespace dualpath::protocol;

namespace {

// Every member of each struct, to compare a decoded value with the one encoded.
auto members(const schedule::request_info& r) {
  return std::tie(r.id, r.hit_tokens, r.append_tokens, r.hit_bytes, r.len, r.kv_bytes, r.hit_blocks);
}
auto members(const schedule::assignment& a) {
  return std::make_tuple(members(a.request), a.pe, a.pe_node, a.de, a.de_node, a.path, a.pe_blocks);
}
auto members(const scheduler_counters& c) {
  return std::tie(c.policy, c.waiting, c.submitted, c.assigned, c.fetches, c.switches, c.prefill_engines,
                  c.decode_engines, c.assigned_pe, c.assigned_de, c.assigned_split);
}
auto members(const turn_times& t) {
  return std::tie(t.submitted, t.assigned, t.kv_ready, t.prefill_start, t.first_token, t.second_token, t.done);
}
auto members(const turn_payload& p) {
  return std::make_tuple(p.request, p.agent, p.turn, p.tokens, p.gen, p.hit_blocks, members(p.times));
}
auto members(const handoff_info& h) {
  return std::make_tuple(members(h.payload), h.first_token, h.de_slots, h.valid_hit_blocks, h.path, h.corrupt_blocks,
                         h.kv_verified, h.kv_corrupt);
}
auto members(const turn_result& t) {
  return std::make_tuple(t.request, t.agent, t.turn, t.generated, members(t.times), t.path, t.valid_hit_blocks,
                         t.corrupt_blocks, t.kv_verified, t.kv_corrupt, t.error, t.prompt_tokens);
}
auto members(const runtime::copy_op& o) {
  return std::tie(o.via, o.src_kind, o.src_offset, o.dst_engine, o.dst_kind, o.dst_offset, o.length);
}
auto members(const node_counters& c) { return std::tie(c.node, c.snic_bytes, c.persisted_blocks); }
auto members(const transport::remote_region& r) { return std::tie(r.addr, r.key, r.length); }

template <class T>
bool round_trips(const T& x) {
  return members(decode(encode(x))) == members(x);
}

schedule::request_info sample_request() { return {11, 12, 13, 14, 15, 16, 17}; }

turn_times sample_times() { return {21, 22, 23, 24, 25, 26, 27}; }

}  // namespace

TEST_CASE("scheduler messages round-trip field by field") {
  const auto r = sample_request();
  CHECK(round_trips(r));
  const auto req = encode(r);
  envelope_reader<schema::Request> rr(req);
  CHECK(rr.root().getHitTokens() == 12);
  CHECK(rr.root().getHitBlocks() == 17);

  schedule::assignment a{r, 31, 32, 33, 34, schedule::read_path::split, 35};
  const auto back = decode(encode(std::vector<schedule::assignment>{a}));
  REQUIRE(back.size() == 1);
  CHECK(members(back[0]) == members(a));
  CHECK(back[0].path == schedule::read_path::split);
  CHECK(back[0].de_node == 34);
  CHECK(back[0].request.kv_bytes == 16);

  CHECK(round_trips(scheduler_counters{"split", 41, 42, 43, 44, 45, 46, 47, 48, 49, 50}));
  scheduler_counters with_nodes;
  with_nodes.nodes.push_back({{7, schedule::role::decode, 99, {{70, 8, 3, 300, 4096}}}, 5});
  const auto nodes = decode(encode(with_nodes)).nodes;
  REQUIRE(nodes.size() == 1);
  CHECK(nodes[0].in_flight == 5);
  CHECK(nodes[0].node.node == 7);
  CHECK(nodes[0].node.kind == schedule::role::decode);
  CHECK(nodes[0].node.read_q == 99);
  REQUIRE(nodes[0].node.engines.size() == 1);
  CHECK(nodes[0].node.engines[0].node == 8);  // each engine's own node, not the group's
  CHECK(nodes[0].node.engines[0].tok == 300);
  CHECK(nodes[0].node.engines[0].free_hbm == 4096);
  const auto status = decode(encode(policy_status{true, "basic", {"basic", "dualpath"}, "why"}));
  CHECK(status.ok);
  CHECK(status.active == "basic");
  CHECK(status.known == std::vector<std::string>{"basic", "dualpath"});
  CHECK(status.message == "why");
}

TEST_CASE("runtime messages round-trip field by field") {
  const turn_payload p{61, 62, 63, {1, 2, 3}, 64, 65, sample_times()};
  CHECK(round_trips(p));
  CHECK(decode(encode(p)).times.second_token == 26);

  handoff_info h{p, 71, {72, 73}, 74, schedule::read_path::de, 75, 76, 77};
  CHECK(round_trips(h));
  CHECK(decode(encode(h)).path == schedule::read_path::de);

  turn_result t{81, 82, 83, {4, 5}, sample_times(), schedule::read_path::split, 84, 85, 86, 87, "failed", 88};
  CHECK(round_trips(t));
  const auto tb = encode(t);
  envelope_reader<schema::TurnResult> tr(tb);
  CHECK(tr.root().getCorruptBlocks() == 85);
  CHECK(std::string(tr.root().getError().cStr()) == "failed");

  copy_batch c;
  c.traffic = transport::traffic_class::model;
  c.ops.push_back({91, runtime::region_kind::hbm, 92, 93, runtime::region_kind::buffer, 94, 95});
  const auto cb = decode(encode(c));
  CHECK(cb.traffic == transport::traffic_class::model);
  REQUIRE(cb.ops.size() == 1);
  CHECK(members(cb.ops[0]) == members(c.ops[0]));
}

TEST_CASE("deployment messages round-trip field by field") {
  CHECK(round_trips(node_counters{101, 102, 103}));
  runtime::endpoint_entry e;
  e.engine = 111;
  e.node = 112;
  e.address = {1, 2};
  e.buffer = {113, 114, 115};
  e.hbm = {116, 117, 118};
  const auto back = decode(encode(std::vector<runtime::endpoint_entry>{e}));
  REQUIRE(back.size() == 1);
  CHECK(back[0].engine == 111);
  CHECK(back[0].node == 112);
  CHECK(back[0].address == e.address);
  CHECK(members(back[0].buffer) == members(e.buffer));
  CHECK(members(back[0].hbm) == members(e.hbm));
}
