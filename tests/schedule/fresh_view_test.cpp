// docs/design.md §7.1: the fresh view keeps the policy's charges until a report acknowledges them.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "schedule/fresh_view.hpp"
#include "schedule/report_acks.hpp"
#include "tests/schedule/helpers.hpp"

using namespace dualpath::schedule;
using namespace dualpath::schedule::test;

namespace {

constexpr uint32_t pe_nodes = 100;  // two engines each: every fetch places two requests (β)
constexpr uint32_t de_first = 200;  // decode nodes 200 and 201, two engines each: four decode engines
constexpr uint64_t de_hbm = uint64_t(1) << 40;

policy_params burst_params() {
  policy_params p;
  p.alpha_tokens = uint64_t(1) << 40;
  p.beta_tokens = 50;  // an engine that took one request (100 appended tokens) takes no other
  p.kv_bytes_per_token = 1;
  return p;
}

// What a leader measures: two engines with the given numbers, acknowledging nothing.
group_report measured(uint32_t node, role kind, uint64_t free_hbm, uint64_t read_q = 0) {
  group_report r;
  r.node.node = node;
  r.node.kind = kind;
  r.node.read_q = read_q;
  for (uint32_t i = 0; i < 2; ++i) r.node.engines.push_back({node * 100 + i, node, 0, 0, free_hbm});
  r.acked.resize(r.node.engines.size());
  return r;
}

std::deque<request_info> burst(uint64_t count) {
  std::deque<request_info> waiting;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t len = 2000 + (i * 7919) % 1000;
    waiting.push_back(make_request(i + 1, /*append*/ 100, len, /*kv*/ len, uint32_t(len / 64), /*hit bytes*/ len * 4));
  }
  return waiting;
}

// The scheduler with the fresh view, as actors/scheduler.cpp drives it.
struct with_fresh_view {
  fresh_view view{/*expiry_s*/ 240};
  cluster_snapshot& snap() { return view.snapshot(); }
  void report(const group_report& r, double now) { view.report(r, now); }
  void record(const std::vector<assignment>& out, double now) { view.record(out, now); }
};

// The scheduler before it: a report simply replaced its node's snapshot.
struct replacing {
  cluster_snapshot s;
  cluster_snapshot& snap() { return s; }
  void report(const group_report& r, double) {
    auto& n = s.upsert(r.node.node, r.node.kind);
    n.read_q = r.node.read_q;
    n.engines = r.node.engines;
  }
  void record(const std::vector<assignment>&, double) {}
};

struct burst_result {
  std::vector<assignment> all;
  std::map<uint32_t, uint64_t> de_tok;  // what each decode engine really holds: Σ len of its requests
  double max_over_avg() const {
    uint64_t sum = 0, max = 0;
    for (const auto& [e, t] : de_tok) {
      sum += t;
      max = std::max(max, t);
    }
    return double(max) / (double(sum) / 4.0);
  }
};

// 200 requests fetched by 100 PE groups in turn, 2 ms apart. Before each fetch the fetching leader reports,
// and so do both decode leaders: their engines hear of a request only at hand-off, so until then their
// reports count none of the burst.
template <class Scheduler>
burst_result run_burst(Scheduler& s) {
  for (uint32_t d = 0; d < 2; ++d) s.report(measured(de_first + d, role::decode, de_hbm), 0.0);
  auto pol = make_policy("balanced");
  auto waiting = burst(200);
  burst_result out;
  for (uint32_t pe = 0; pe < pe_nodes; ++pe) {
    const double now = 0.002 * (pe + 1);
    s.report(measured(pe, role::prefill, 0), now);
    for (uint32_t d = 0; d < 2; ++d) s.report(measured(de_first + d, role::decode, de_hbm), now);
    auto got = pol->assign(s.snap(), pe, waiting, burst_params());
    REQUIRE(got.size() == 2);
    s.record(got, now);
    out.all.insert(out.all.end(), got.begin(), got.end());
  }
  CHECK(waiting.empty());
  for (const auto& a : out.all) out.de_tok[a.de] += a.request.len;
  return out;
}

const engine_snapshot& engine_of(const cluster_snapshot& snap, uint32_t engine) {
  const auto* n = snap.find(engine / 100);
  REQUIRE(n);
  for (const auto& e : n->engines)
    if (e.engine == engine) return e;
  FAIL("no engine " << engine);
  return n->engines.front();
}

}  // namespace

TEST_CASE("burst of 200 between reports that do not count it: the fresh view balances, replacing herds") {
  with_fresh_view fresh;
  const auto balanced = run_burst(fresh);
  replacing old;
  const auto herded = run_burst(old);
  MESSAGE("decode tok_e max/avg: fresh view " << balanced.max_over_avg() << ", replace on report "
                                              << herded.max_over_avg());
  REQUIRE(balanced.de_tok.size() == 4);
  CHECK(balanced.max_over_avg() <= 1.10);
  // Every fetch sees idle decode engines again and puts its two requests on the first engine of each group.
  CHECK(herded.max_over_avg() > 1.9);

  // Nothing forgotten, nothing double counted: the view holds exactly what was assigned.
  for (const auto& [engine, tok] : balanced.de_tok) {
    CHECK(engine_of(fresh.snap(), engine).tok == tok);
    uint32_t count = 0;
    for (const auto& a : balanced.all) count += a.de == engine;
    CHECK(engine_of(fresh.snap(), engine).seq == count);
    CHECK(engine_of(fresh.snap(), engine).free_hbm == de_hbm - tok);  // kv_bytes = len here
  }
  // Per request: PE and DE engines, and the reads (through one node or split over both).
  CHECK(fresh.view.pending() >= 2 * 200 + 200);
}

TEST_CASE("reports that count the burst afterwards: no double counting, the view equals the reports") {
  with_fresh_view s;
  const auto b = run_burst(s);
  const double later = 1.0;

  SUBCASE("prefill leaders acknowledge their engines' requests and reads; decode charges stay") {
    const size_t before = s.view.pending();
    for (uint32_t pe = 0; pe < pe_nodes; ++pe) {
      auto r = measured(pe, role::prefill, 0, /*read_q*/ 777);
      for (const auto& a : b.all) {
        if (a.pe_node != pe) continue;
        r.node.engines[a.pe % 100].tok = a.request.append_tokens;
        r.node.engines[a.pe % 100].seq = 1;
        r.acked[a.pe % 100].push_back(a.request.id);
        r.read_acked.push_back(a.request.id);
      }
      s.report(r, later);
      const auto* n = s.snap().find(pe);
      CHECK(n->read_q == 777);
      for (size_t i = 0; i < 2; ++i) CHECK(n->engines[i].tok == r.node.engines[i].tok);
    }
    CHECK(s.view.pending() < before);
    CHECK(s.view.pending() >= 200);  // the decode engines have not been told yet
  }

  // The decode engines now hold the burst (hand-off) and say so; the prefill leaders too.
  std::map<uint32_t, group_report> reports;
  for (uint32_t d = 0; d < 2; ++d) reports[de_first + d] = measured(de_first + d, role::decode, de_hbm, 1234);
  for (const auto& a : b.all) {
    auto& r = reports[a.de_node];
    auto& e = r.node.engines[a.de % 100];
    e.tok += a.request.len;
    e.seq += 1;
    e.free_hbm -= a.request.kv_bytes;
    r.acked[a.de % 100].push_back(a.request.id);
  }
  for (uint32_t pe = 0; pe < pe_nodes; ++pe) reports[pe] = measured(pe, role::prefill, 0, 55);
  // Twice: a report that repeats what the view already knows must change nothing.
  for (int round = 0; round < 2; ++round) {
    for (const auto& [node, r] : reports) s.report(r, later + 0.002 * (round + 1));
    CHECK(s.view.pending() == 0);
    CHECK(s.view.expired() == 0);
    for (const auto& [node, r] : reports) {
      const auto* n = s.snap().find(node);
      REQUIRE(n);
      CHECK(n->read_q == r.node.read_q);
      REQUIRE(n->engines.size() == r.node.engines.size());
      for (size_t i = 0; i < n->engines.size(); ++i) {
        CHECK(n->engines[i].tok == r.node.engines[i].tok);
        CHECK(n->engines[i].seq == r.node.engines[i].seq);
        CHECK(n->engines[i].free_hbm == r.node.engines[i].free_hbm);
      }
    }
  }
}

TEST_CASE("a decode engine that counts a request ends its read charges on the other node too") {
  fresh_view view(240);
  view.report(measured(1, role::prefill, 0), 0);
  view.report(measured(2, role::decode, 1000), 0);
  assignment a;
  a.request = make_request(9, 100, 500, /*kv*/ 300, /*blocks*/ 4, /*hit bytes*/ 4000);
  a.pe = 100;
  a.pe_node = 1;
  a.de = 201;
  a.de_node = 2;
  a.path = read_path::split;
  a.pe_blocks = 1;  // 1000 bytes through node 1, 3000 through node 2
  view.record({a}, 0);
  CHECK(view.pending() == 4);
  view.report(measured(1, role::prefill, 0), 0.002);
  CHECK(view.snapshot().find(1)->read_q == 1000);
  CHECK(view.snapshot().find(1)->engines[0].tok == 100);
  view.report(measured(2, role::decode, 1000), 0.002);
  CHECK(view.snapshot().find(2)->read_q == 3000);
  CHECK(view.snapshot().find(2)->engines[1].free_hbm == 700);
  auto told = measured(2, role::decode, 700);
  told.node.engines[1].tok = 500;
  told.acked[1].push_back(9);
  view.report(told, 0.004);
  CHECK(view.pending() == 0);
  view.report(measured(1, role::prefill, 0), 0.006);
  CHECK(view.snapshot().find(1)->read_q == 0);
  CHECK(view.snapshot().find(1)->engines[0].tok == 0);
}

TEST_CASE("charges no report acknowledges expire after the bound, and are counted") {
  fresh_view view(/*expiry_s*/ 1.0);
  view.report(measured(1, role::prefill, 0), 0);
  view.report(measured(2, role::decode, 1000), 0);
  assignment a;
  a.request = make_request(5, 100, 500, 300, 0, 0);  // no hit: no read charges
  a.pe = 101;
  a.pe_node = 1;
  a.de = 200;
  a.de_node = 2;
  view.record({a}, 0.1);
  CHECK(view.pending() == 2);
  view.report(measured(2, role::decode, 1000), 1.0);  // within the bound: still charged
  CHECK(view.pending() == 2);
  CHECK(view.snapshot().find(2)->engines[0].tok == 500);
  CHECK(view.snapshot().find(2)->engines[0].seq == 1);
  view.report(measured(2, role::decode, 1000), 1.2);  // past it: gone, and the view is the report
  CHECK(view.pending() == 0);
  CHECK(view.expired() == 2);
  CHECK(view.snapshot().find(2)->engines[0].tok == 0);
  CHECK(view.snapshot().find(2)->engines[0].free_hbm == 1000);
  view.report(measured(1, role::prefill, 0), 1.3);
  CHECK(view.snapshot().find(1)->engines[1].tok == 0);
}

TEST_CASE("a leader acknowledges every request its engines counted since its last report") {
  report_acks acks(2);
  acks.on_engine(0, {3, 1});
  acks.on_engine(0, {1});  // request 3 came and went between two reports
  acks.on_engine(1, {7});
  acks.on_engine(5, {9});  // not an engine of the group: ignored
  CHECK(acks.take() == std::vector<std::vector<uint64_t>>{{1, 3}, {7}});
  acks.on_engine(1, {});  // it still counted 7 when the last report went out
  CHECK(acks.take() == std::vector<std::vector<uint64_t>>{{1}, {7}});
  CHECK(acks.take() == std::vector<std::vector<uint64_t>>{{1}, {}});
}

TEST_CASE("a leader leaves out a report that repeats the last one sent, but not every one") {
  report_gate gate(3);
  group_report idle = measured(7, role::decode, 1000);
  CHECK(gate.send(idle));  // the first report always goes out
  CHECK_FALSE(gate.send(idle));
  CHECK_FALSE(gate.send(idle));
  CHECK(gate.send(idle));  // the third repeat: every third tick while nothing changes
  CHECK_FALSE(gate.send(idle));

  group_report busier = idle;  // any number that moved goes out at once
  busier.node.engines[1].tok = 5;
  CHECK(gate.send(busier));
  CHECK_FALSE(gate.send(busier));
  group_report read = busier;
  read.node.read_q = 4096;
  CHECK(gate.send(read));

  group_report acked = read;  // the same numbers, but they now count a request: the view must hear it
  acked.acked = {{11}, {}};
  CHECK(gate.send(acked));
  CHECK(gate.send(acked));  // an engine that holds a request acknowledges it in every report
  group_report read_acked = read;
  read_acked.read_acked = {12};
  CHECK(gate.send(read_acked));

  group_report moved = read;  // a node that changed role reports as it is now
  moved.node.kind = role::prefill;
  CHECK(gate.send(moved));
}
