// docs/design.md §13: a lost node's turns in flight are named for re-running, and its engines leave the view.
#include <doctest/doctest.h>

#include "schedule/fresh_view.hpp"
#include "schedule/turn_placements.hpp"

using namespace dualpath::schedule;

namespace {

assignment placed_on(uint64_t id, uint32_t pe_node, uint32_t de_node) {
  assignment a;
  a.request.id = id;
  a.request.append_tokens = 10;
  a.request.len = 20;
  a.request.kv_bytes = 100;
  a.pe = pe_node, a.pe_node = pe_node, a.de = de_node, a.de_node = de_node;
  return a;
}

group_report report_of(uint32_t node, role kind) {
  group_report r;
  r.node.node = node;
  r.node.kind = kind;
  r.node.engines.push_back({node, node, 0, 0, 1000});
  r.acked.emplace_back();
  return r;
}

}  // namespace

TEST_CASE("turn placements: a lost node names the turns placed with their PE or DE on it, once") {
  turn_placements p;
  p.placed(0, placed_on(100, 0, 2));
  p.placed(1, placed_on(200, 1, 3));
  p.placed(2, placed_on(300, 1, 2));
  CHECK(p.per_node(4) == std::vector<uint32_t>{1, 2, 2, 1});
  CHECK(p.lose(2) == std::vector<uint64_t>{100, 300});
  CHECK(p.lose(2).empty());  // forgotten: a second loss of the same node names nothing
  CHECK(p.size() == 1);
  p.submitted(1);  // agent 1's next submit: its turn ended (or is being re-run)
  CHECK(p.lose(1).empty());
  p.placed(1, placed_on(201, 0, 3));  // the re-run, placed again elsewhere
  CHECK(p.lose(0) == std::vector<uint64_t>{201});
}

TEST_CASE("fresh view: a lost node leaves the snapshot, its requests' charges go, a late report is ignored") {
  fresh_view v(100);
  for (uint32_t n : {0u, 1u}) v.report(report_of(n, role::prefill), 0);
  for (uint32_t n : {2u, 3u}) v.report(report_of(n, role::decode), 0);
  v.record({placed_on(7, 0, 2), placed_on(8, 1, 3)}, 0);
  CHECK(v.pending() == 4);
  CHECK(v.remove_node(2) == 1);
  CHECK(v.pending() == 2);  // request 8 keeps its charges; request 7's went, also the one on node 0
  CHECK(v.snapshot().engine_count(role::decode) == 1);
  CHECK(v.snapshot().find(2) == nullptr);
  v.report(report_of(2, role::decode), 1);  // in flight when the node died
  CHECK(v.snapshot().find(2) == nullptr);
  CHECK(v.lost(2));
  CHECK_FALSE(v.lost(3));
}

TEST_CASE("fresh view: a restored node's next report brings its engines back, empty, and they are chosen again") {
  fresh_view v(100);
  for (uint32_t n : {0u, 1u}) v.report(report_of(n, role::prefill), 0);
  for (uint32_t n : {2u, 3u}) v.report(report_of(n, role::decode), 0);
  v.record({placed_on(7, 0, 2)}, 0);
  v.remove_node(2);
  v.restore_node(2);
  CHECK_FALSE(v.lost(2));
  CHECK(v.snapshot().find(2) == nullptr);  // nothing until the new process reports
  v.report(report_of(2, role::decode), 2);
  REQUIRE(v.snapshot().find(2) != nullptr);
  CHECK(v.snapshot().engine_count(role::decode) == 2);
  const auto& e = v.snapshot().find(2)->engines.at(0);
  CHECK(e.seq == 0);  // request 7's charges went with the loss and do not come back
  CHECK(e.tok == 0);
  v.record({placed_on(9, 1, 2)}, 2);  // assigned there; the new process's next report does not know it yet
  v.report(report_of(2, role::decode), 3);
  CHECK(v.snapshot().find(2)->engines.at(0).seq == 1);  // charged like any engine's
}

TEST_CASE("turn placements: a draining decode node is named the turns it will decode, and they stay placed") {
  turn_placements p;
  p.placed(0, placed_on(100, 0, 2));
  p.placed(1, placed_on(200, 1, 3));
  p.placed(2, placed_on(300, 1, 2));
  CHECK(p.decoding_on(2) == std::vector<uint64_t>{100, 300});
  CHECK(p.decoding_on(1).empty());  // a prefill node's turns decode elsewhere
  CHECK(p.size() == 3);             // nothing is forgotten: the turns finish where they are
  CHECK(p.decoding_on(2) == std::vector<uint64_t>{100, 300});
  p.submitted(0);
  CHECK(p.decoding_on(2) == std::vector<uint64_t>{300});
}
