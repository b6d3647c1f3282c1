// Cap'n Proto encodings of the scheduler protocol (schema/scheduler.capnp).
#include "protocol/scheduler_codec.hpp"

#include "protocol/field_codec.hpp"

namespace dualpath::protocol {

namespace sch = dualpath::schedule;

namespace {

struct request_fields {
  using T = sch::request_info;
  using S = schema::Request;
  static inline const auto all = std::make_tuple(
      DP_FIELD(id, Id), DP_FIELD(hit_tokens, HitTokens), DP_FIELD(append_tokens, AppendTokens),
      DP_FIELD(hit_bytes, HitBytes), DP_FIELD(len, Len), DP_FIELD(kv_bytes, KvBytes), DP_FIELD(hit_blocks, HitBlocks));
};

// The request travels as a nested struct of its own.
struct assignment_fields {
  using T = sch::assignment;
  using S = schema::Assignment;
  static inline const auto all =
      std::make_tuple(DP_FIELD(pe, Pe), DP_FIELD(pe_node, PeNode), DP_FIELD(de, De), DP_FIELD(de_node, DeNode),
                      DP_FIELD(path, Path), DP_FIELD(pe_blocks, PeBlocks));
};

struct counter_fields {
  using T = scheduler_counters;
  using S = schema::SchedulerStats;
  static inline const auto all =
      std::make_tuple(DP_FIELD(policy, Policy), DP_FIELD(waiting, Waiting), DP_FIELD(submitted, Submitted),
                      DP_FIELD(assigned, Assigned), DP_FIELD(fetches, Fetches), DP_FIELD(switches, Switches),
                      DP_FIELD(prefill_engines, PrefillEngines), DP_FIELD(decode_engines, DecodeEngines),
                      DP_FIELD(assigned_pe, AssignedPe), DP_FIELD(assigned_de, AssignedDe),
                      DP_FIELD(assigned_split, AssignedSplit), DP_FIELD(pending_charges, PendingCharges),
                      DP_FIELD(expired_charges, ExpiredCharges), DP_FIELD(refused_commands, RefusedCommands));
};

// The list of known policy names is not a mapped field.
struct policy_status_fields {
  using T = policy_status;
  using S = schema::PolicyStatus;
  static inline const auto all =
      std::make_tuple(DP_FIELD(ok, Ok), DP_FIELD(active, Active), DP_FIELD(message, Message));
};

schema::Role to_schema(sch::role kind) {
  return kind == sch::role::prefill ? schema::Role::PREFILL : schema::Role::DECODE;
}
sch::role from_schema(schema::Role kind) {
  return kind == schema::Role::PREFILL ? sch::role::prefill : sch::role::decode;
}

// Which node an engine is said to be on: a leader's report stamps its group's node on every engine; the
// scheduler's stats keep each engine's own.
enum class engine_node { group_node, own_node };
constexpr engine_node group_node = engine_node::group_node, own_node = engine_node::own_node;

void write_stats(schema::NodeStats::Builder s, const sch::node_snapshot& node, engine_node stamp) {
  s.setNode(node.node);
  s.setReadQ(node.read_q);
  auto list = s.initEngines(unsigned(node.engines.size()));
  for (unsigned i = 0; i < node.engines.size(); ++i) {
    const auto& e = node.engines[i];
    auto x = list[i];
    x.setEngine(e.engine);
    x.setNode(stamp == group_node ? node.node : e.node);
    x.setSeqE(e.seq);
    x.setTokE(e.tok);
    x.setFreeHbm(e.free_hbm);
  }
}

sch::node_snapshot read_stats(schema::NodeStats::Reader s, sch::role kind, engine_node stamp) {
  sch::node_snapshot node;
  node.node = s.getNode();
  node.kind = kind;
  node.read_q = s.getReadQ();
  for (auto x : s.getEngines())
    node.engines.push_back(
        {x.getEngine(), stamp == group_node ? node.node : x.getNode(), x.getSeqE(), x.getTokE(), x.getFreeHbm()});
  return node;
}

}  // namespace

envelope<schema::Request> encode(const sch::request_info& r) {
  return encode_fields<schema::Request>(r, request_fields::all);
}

sch::request_info decode(const envelope<schema::Request>& e) {
  return decode_fields<sch::request_info>(e, request_fields::all);
}

envelope<schema::GroupReport> encode(const sch::group_report& r) {
  return build_envelope<schema::GroupReport>([&](schema::GroupReport::Builder b) {
    b.setRole(to_schema(r.node.kind));
    write_stats(b.initStats(), r.node, group_node);
    auto acked = b.initAcked(unsigned(r.acked.size()));
    for (unsigned i = 0; i < r.acked.size(); ++i) put_list(acked.init(i, unsigned(r.acked[i].size())), r.acked[i]);
    put_list(b.initReadAcked(unsigned(r.read_acked.size())), r.read_acked);
  });
}

envelope<schema::GroupReport> encode_report(sch::role kind, const sch::node_snapshot& node) {
  sch::group_report r;
  r.node = node;
  r.node.kind = kind;
  return encode(r);
}

envelope<schema::Fetch> encode_fetch(uint32_t node) {
  return build_envelope<schema::Fetch>([&](schema::Fetch::Builder b) { b.setNode(node); });
}

envelope<schema::Assignments> encode(const std::vector<sch::assignment>& list) {
  return build_envelope<schema::Assignments>([&](schema::Assignments::Builder b) {
    auto items = b.initItems(unsigned(list.size()));
    for (unsigned i = 0; i < list.size(); ++i) {
      write_fields(items[i].initRequest(), list[i].request, request_fields::all);
      write_fields(items[i], list[i], assignment_fields::all);
    }
  });
}

std::vector<sch::assignment> decode(const envelope<schema::Assignments>& e) {
  return read_envelope(e, [](schema::Assignments::Reader r) {
    std::vector<sch::assignment> out;
    for (auto x : r.getItems()) {
      sch::assignment a;
      read_fields(x.getRequest(), a.request, request_fields::all);
      read_fields(x, a, assignment_fields::all);
      out.push_back(a);
    }
    return out;
  });
}

policy_status decode(const envelope<schema::PolicyStatus>& e) {
  return read_envelope(e, [](schema::PolicyStatus::Reader r) {
    policy_status out;
    read_fields(r, out, policy_status_fields::all);
    for (auto n : r.getKnown()) out.known.emplace_back(n.cStr());
    return out;
  });
}

scheduler_counters decode(const envelope<schema::SchedulerStats>& e) {
  return read_envelope(e, [](schema::SchedulerStats::Reader r) {
    scheduler_counters out;
    read_fields(r, out, counter_fields::all);
    for (auto n : r.getNodes())
      out.nodes.push_back({read_stats(n.getStats(), from_schema(n.getRole()), own_node), n.getInFlight()});
    return out;
  });
}

sch::group_report decode(const envelope<schema::GroupReport>& e) {
  return read_envelope(e, [](schema::GroupReport::Reader r) {
    sch::group_report out;
    out.node = read_stats(r.getStats(), from_schema(r.getRole()), group_node);
    for (auto ids : r.getAcked()) out.acked.push_back(get_list<uint64_t>(ids));
    out.read_acked = get_list<uint64_t>(r.getReadAcked());
    return out;
  });
}

uint32_t decode(const envelope<schema::Fetch>& e) {
  return read_envelope(e, [](schema::Fetch::Reader r) { return r.getNode(); });
}

envelope<schema::PolicyStatus> encode(const policy_status& x) {
  return build_envelope<schema::PolicyStatus>([&](schema::PolicyStatus::Builder b) {
    write_fields(b, x, policy_status_fields::all);
    auto known = b.initKnown(unsigned(x.known.size()));
    for (unsigned i = 0; i < x.known.size(); ++i) known.set(i, x.known[i]);
  });
}

envelope<schema::SchedulerStats> encode(const scheduler_counters& c) {
  return build_envelope<schema::SchedulerStats>([&](schema::SchedulerStats::Builder b) {
    write_fields(b, c, counter_fields::all);
    auto nodes = b.initNodes(unsigned(c.nodes.size()));
    for (unsigned i = 0; i < c.nodes.size(); ++i) {
      nodes[i].setRole(to_schema(c.nodes[i].node.kind));
      nodes[i].setInFlight(c.nodes[i].in_flight);
      write_stats(nodes[i].initStats(), c.nodes[i].node, own_node);
    }
  });
}

}  // namespace dualpath::protocol
