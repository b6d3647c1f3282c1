// docs/design.md §7.8: queue_aware chooses the decode engine with the read path, and a prefill group takes no
// more than its share of the prefill load.
#include <doctest/doctest.h>

#include <algorithm>

#include "schedule/policy.hpp"
#include "tests/schedule/helpers.hpp"

using namespace dualpath::schedule;
using namespace dualpath::schedule::test;

namespace {

// Two prefill groups of two engines, each engine holding `tok` tokens, one decode node, and `n` turns of 100
// appended tokens waiting. Returns how many turns group 1 and then group 2 take when each fetches once.
std::pair<size_t, size_t> two_groups_fetch(uint64_t tok, uint64_t n, std::deque<request_info>& waiting) {
  cluster_snapshot snap;
  add_node(snap, 1, role::prefill, 0, {tok, tok});
  add_node(snap, 2, role::prefill, 0, {tok, tok});
  add_node(snap, 5, role::decode, 0, {0, 0});
  for (uint64_t i = 0; i < n; ++i) waiting.push_back(make_request(i));
  auto pol = make_policy("balanced_rq");
  const size_t first = pol->assign(snap, 1, waiting, loose()).size();
  const auto second = pol->assign(snap, 2, waiting, loose());
  for (const auto& a : second) CHECK(a.pe_node == 2);
  return {first, second.size()};
}

// The one assignment queue_aware makes when prefill node 1 fetches request `id` alone.
assignment assign_one(cluster_snapshot& snap, uint64_t id) {
  std::deque<request_info> waiting{make_request(id)};
  const auto out = make_policy("balanced_rq")->assign(snap, 1, waiting, loose());
  REQUIRE(out.size() == 1);
  return out[0];
}

}  // namespace

TEST_CASE("queue_aware: the decode node whose read ends soonest, within Z, and the path through it") {
  cluster_snapshot snap;
  add_node(snap, 1, role::prefill, /*read_q*/ 50000, {0});
  add_node(snap, 4, role::decode, /*read_q*/ 30000, {0});  // least loaded, but its SNIC is backed up
  add_node(snap, 5, role::decode, /*read_q*/ 0, {200});
  const assignment out = assign_one(snap, 1);
  CHECK(out.de == 500);  // the paper's rule (smallest token load) would take 400
  CHECK(out.path == read_path::de);
  CHECK(snap.find(5)->read_q == 10000);

  // Beyond Z the token load decides again: a node far above the others' load is not chosen for its queue.
  cluster_snapshot busy;
  add_node(busy, 1, role::prefill, 50000, {0});
  add_node(busy, 4, role::decode, 30000, {0});
  add_node(busy, 5, role::decode, 0, {100000});
  const assignment out2 = assign_one(busy, 2);
  CHECK(out2.de == 400);
  CHECK(out2.path == read_path::de);  // 30000 is still shorter than the PE node's 50000
}

TEST_CASE("queue_aware: a read divides between the two SNICs so both queues drain together") {
  // Both queues empty (the end of an offline run): half the hit blocks through each SNIC.
  cluster_snapshot idle;
  add_node(idle, 1, role::prefill, 0, {0});
  add_node(idle, 4, role::decode, 0, {0});
  const assignment out = assign_one(idle, 1);
  CHECK(out.path == read_path::split);
  CHECK(out.pe_blocks == 5);
  CHECK(idle.find(1)->read_q == 5000);
  CHECK(idle.find(4)->read_q == 5000);

  // Among decode nodes, the one whose divided read ends soonest: node 4 (both queues empty: ends at 5,000)
  // over node 5 (3,000 queued: ends at 6,500). Both reads would *start* at once through the idle PE node's
  // SNIC, and node 5 holds fewer tokens, so a choice by start and then token load would take node 5.
  cluster_snapshot apart;
  add_node(apart, 1, role::prefill, 0, {0});
  add_node(apart, 4, role::decode, 0, {200});
  add_node(apart, 5, role::decode, 3000, {0});
  const assignment out2 = assign_one(apart, 2);
  CHECK(out2.de == 400);
  CHECK(out2.path == read_path::split);
  CHECK(apart.find(1)->read_q == 5000);
  CHECK(apart.find(4)->read_q == 5000);
  CHECK(apart.find(5)->read_q == 3000);
}

TEST_CASE("queue_aware: a prefill group stops at its share of the load while the other groups idle") {
  std::deque<request_info> waiting;
  // Half of the work for half of the engines; β alone would have let group 1 take all six.
  CHECK(two_groups_fetch(0, 6, waiting) == std::pair<size_t, size_t>{3, 3});
  CHECK(waiting.empty());
  auto pol = make_policy("balanced_rq");
  // Alone, a group takes as much as β allows.
  cluster_snapshot one;
  add_node(one, 1, role::prefill, 0, {0, 0});
  add_node(one, 5, role::decode, 0, {0, 0});
  std::deque<request_info> all;
  for (uint64_t i = 0; i < 6; ++i) all.push_back(make_request(i));
  CHECK(pol->assign(one, 1, all, loose()).size() == 6);
}

TEST_CASE("queue_aware: a busy group's share counts the waiting turns, so a queue does not wait for idle engines") {
  // Every engine holds 1,000 tokens and eight turns of 100 wait: 4,800 outstanding over four engines, a share
  // of 1.05 × 1,200 = 1,260 per engine. Group 1 takes five (a mean of 1,250); counting only the engines' load
  // it would have stopped after two, at 5% over their mean, with six turns left waiting.
  std::deque<request_info> waiting;
  CHECK(two_groups_fetch(1000, 8, waiting) == std::pair<size_t, size_t>{5, 3});
  CHECK(waiting.empty());
}

// §7.8: at an offline start every first turn arrives at once; a busy prefill engine takes first turns only up to
// half its share of them, so the engines' first passes do not all end together.
TEST_CASE("queue_aware: first turns go to busy prefill engines in two waves") {
  auto fetch = [](std::initializer_list<uint64_t> pe_toks, uint32_t hit_blocks, std::deque<request_info>& waiting) {
    cluster_snapshot snap;
    add_node(snap, 1, role::prefill, 0, pe_toks);
    add_node(snap, 5, role::decode, 0, {0, 0});
    for (uint64_t i = 0; i < 8; ++i) waiting.push_back(make_request(i, 100, 1000, 1000, hit_blocks, hit_blocks * 1000));
    return make_policy("balanced_rq")->assign(snap, 1, waiting, loose());
  };
  std::deque<request_info> first;
  const auto wave = fetch({0, 0}, 0, first);
  // 800 first-turn tokens over two engines: each takes up to 200 (two turns), the other four wait.
  CHECK(wave.size() == 4);
  CHECK(first.size() == 4);
  CHECK(std::count_if(wave.begin(), wave.end(), [](const assignment& a) { return a.pe == 100; }) == 2);
  // Turns with hits are not a start's burst: the group takes all of them.
  std::deque<request_info> later;
  CHECK(fetch({0, 0}, 10, later).size() == 8);
  // With one prefill engine a wave would only add a pass.
  std::deque<request_info> alone;
  CHECK(fetch({0}, 0, alone).size() == 8);
}
