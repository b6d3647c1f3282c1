// Cap'n Proto encodings of the scheduler protocol (schema/scheduler.capnp).
#include "protocol/scheduler_codec.hpp"

#include "protocol/enum_codec.hpp"

namespace dualpath::actors {

namespace sch = dualpath::schedule;

envelope<schema::Request> encode(const sch::request_info& r) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<schema::Request>();
  b.setId(r.id);
  b.setHitTokens(r.hit_tokens);
  b.setAppendTokens(r.append_tokens);
  b.setHitBytes(r.hit_bytes);
  b.setLen(r.len);
  b.setKvBytes(r.kv_bytes);
  b.setHitBlocks(r.hit_blocks);
  return to_envelope<schema::Request>(m);
}

namespace {

sch::request_info read_request(schema::Request::Reader r) {
  sch::request_info out;
  out.id = r.getId();
  out.hit_tokens = r.getHitTokens();
  out.append_tokens = r.getAppendTokens();
  out.hit_bytes = r.getHitBytes();
  out.len = r.getLen();
  out.kv_bytes = r.getKvBytes();
  out.hit_blocks = r.getHitBlocks();
  return out;
}

void write_request(schema::Request::Builder b, const sch::request_info& r) {
  b.setId(r.id);
  b.setHitTokens(r.hit_tokens);
  b.setAppendTokens(r.append_tokens);
  b.setHitBytes(r.hit_bytes);
  b.setLen(r.len);
  b.setKvBytes(r.kv_bytes);
  b.setHitBlocks(r.hit_blocks);
}

}  // namespace

sch::request_info decode(const envelope<schema::Request>& e) {
  envelope_reader<schema::Request> reader(e);
  return read_request(reader.root());
}

envelope<schema::GroupReport> encode_report(sch::role kind, const sch::node_snapshot& node) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<schema::GroupReport>();
  b.setRole(kind == sch::role::prefill ? schema::Role::PREFILL : schema::Role::DECODE);
  auto s = b.initStats();
  s.setNode(node.node);
  s.setReadQ(node.read_q);
  auto list = s.initEngines(unsigned(node.engines.size()));
  for (unsigned i = 0; i < node.engines.size(); ++i) {
    const auto& e = node.engines[i];
    auto x = list[i];
    x.setEngine(e.engine);
    x.setNode(node.node);
    x.setSeqE(e.seq);
    x.setTokE(e.tok);
    x.setFreeHbm(e.free_hbm);
  }
  return to_envelope<schema::GroupReport>(m);
}

envelope<schema::Fetch> encode_fetch(uint32_t node) {
  capnp::MallocMessageBuilder m;
  m.initRoot<schema::Fetch>().setNode(node);
  return to_envelope<schema::Fetch>(m);
}

envelope<schema::Assignments> encode(const std::vector<sch::assignment>& list) {
  capnp::MallocMessageBuilder m;
  auto items = m.initRoot<schema::Assignments>().initItems(unsigned(list.size()));
  for (unsigned i = 0; i < list.size(); ++i) {
    const auto& a = list[i];
    auto x = items[i];
    write_request(x.initRequest(), a.request);
    x.setPe(a.pe);
    x.setPeNode(a.pe_node);
    x.setDe(a.de);
    x.setDeNode(a.de_node);
    x.setPath(to_schema(a.path));
    x.setPeBlocks(a.pe_blocks);
  }
  return to_envelope<schema::Assignments>(m);
}

std::vector<sch::assignment> decode(const envelope<schema::Assignments>& e) {
  envelope_reader<schema::Assignments> reader(e);
  std::vector<sch::assignment> out;
  for (auto x : reader.root().getItems()) {
    sch::assignment a;
    a.request = read_request(x.getRequest());
    a.pe = x.getPe();
    a.pe_node = x.getPeNode();
    a.de = x.getDe();
    a.de_node = x.getDeNode();
    a.path = from_schema(x.getPath());
    a.pe_blocks = x.getPeBlocks();
    out.push_back(a);
  }
  return out;
}

policy_status decode(const envelope<schema::PolicyStatus>& e) {
  envelope_reader<schema::PolicyStatus> reader(e);
  auto r = reader.root();
  policy_status out;
  out.ok = r.getOk();
  out.active = r.getActive();
  for (auto n : r.getKnown()) out.known.emplace_back(n.cStr());
  out.message = r.getMessage();
  return out;
}

scheduler_counters decode(const envelope<schema::SchedulerStats>& e) {
  envelope_reader<schema::SchedulerStats> reader(e);
  auto r = reader.root();
  scheduler_counters c;
  c.policy = r.getPolicy();
  c.waiting = r.getWaiting();
  c.submitted = r.getSubmitted();
  c.assigned = r.getAssigned();
  c.fetches = r.getFetches();
  c.switches = r.getSwitches();
  c.prefill_engines = r.getPrefillEngines();
  c.decode_engines = r.getDecodeEngines();
  c.assigned_pe = r.getAssignedPe();
  c.assigned_de = r.getAssignedDe();
  c.assigned_split = r.getAssignedSplit();
  return c;
}

std::pair<sch::role, sch::node_snapshot> decode(const envelope<schema::GroupReport>& e) {
  envelope_reader<schema::GroupReport> reader(e);
  auto r = reader.root();
  const auto kind = r.getRole() == schema::Role::PREFILL ? sch::role::prefill : sch::role::decode;
  auto stats = r.getStats();
  sch::node_snapshot node;
  node.node = stats.getNode();
  node.kind = kind;
  node.read_q = stats.getReadQ();
  for (auto x : stats.getEngines())
    node.engines.push_back({x.getEngine(), stats.getNode(), x.getSeqE(), x.getTokE(), x.getFreeHbm()});
  return {kind, std::move(node)};
}

uint32_t decode(const envelope<schema::Fetch>& e) {
  envelope_reader<schema::Fetch> reader(e);
  return reader.root().getNode();
}

envelope<schema::PolicyStatus> encode(const policy_status& x) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<schema::PolicyStatus>();
  b.setOk(x.ok);
  b.setActive(x.active);
  auto known = b.initKnown(unsigned(x.known.size()));
  for (unsigned i = 0; i < x.known.size(); ++i) known.set(i, x.known[i]);
  b.setMessage(x.message);
  return to_envelope<schema::PolicyStatus>(m);
}

envelope<schema::SchedulerStats> encode(const scheduler_counters& c) {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<schema::SchedulerStats>();
  b.setPolicy(c.policy);
  b.setWaiting(c.waiting);
  b.setSubmitted(c.submitted);
  b.setAssigned(c.assigned);
  b.setFetches(c.fetches);
  b.setSwitches(c.switches);
  b.setPrefillEngines(c.prefill_engines);
  b.setDecodeEngines(c.decode_engines);
  b.setAssignedPe(c.assigned_pe);
  b.setAssignedDe(c.assigned_de);
  b.setAssignedSplit(c.assigned_split);
  return to_envelope<schema::SchedulerStats>(m);
}

}  // namespace dualpath::actors
