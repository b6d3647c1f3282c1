// The paper's Basic scheduling (docs/design.md §7.7): scheduler policy `framework`, the unmodified framework's
// engine choice and the PE read path only.
#include <doctest/doctest.h>

#include "schedule/policy.hpp"
#include "tests/schedule/helpers.hpp"

using namespace dualpath::schedule;
using namespace dualpath::schedule::test;

TEST_CASE("framework: PEs of the fetching group and DEs over the cluster in turn, every read on the PE path") {
  cluster_snapshot snap;
  policy_params p;
  p.alpha_tokens = 1;  // any read queue is 'long': framework must not care
  p.beta_tokens = 1u << 20;
  add_node(snap, 1, role::prefill, /*read_q*/ 1u << 30, {0, 0});
  add_node(snap, 2, role::prefill, 0, {0});  // another group: never chosen when node 1 fetches
  add_node(snap, 4, role::decode, 0, {0, 0});
  add_node(snap, 5, role::decode, 0, {0});
  std::deque<request_info> waiting;
  for (uint64_t i = 0; i < 5; ++i) waiting.push_back(make_request(i));
  auto pol = make_policy("rr_pe");
  CHECK(pol->name() == "rr_pe");
  const auto out = pol->assign(snap, 1, waiting, p);
  REQUIRE(out.size() == 5);
  const uint32_t pes[] = {100, 101, 100, 101, 100};
  const uint32_t des[] = {400, 401, 500, 400, 401};  // over the cluster's DEs, node by node
  for (size_t i = 0; i < out.size(); ++i) {
    CHECK(out[i].request.id == i);
    CHECK(out[i].pe == pes[i]);
    CHECK(out[i].pe_node == 1);
    CHECK(out[i].de == des[i]);
    CHECK(out[i].path == read_path::pe);  // though node 1's queue is far longer than the DE nodes'
    CHECK(out[i].pe_blocks == out[i].request.hit_blocks);
  }
  CHECK(waiting.empty());
  CHECK(snap.find(1)->read_q == (1u << 30) + 5 * 10000);  // every hit byte charged to the PE node
  CHECK(snap.find(4)->read_q == 0);
}

TEST_CASE("framework skips only engines that cannot take work, and stops when none can") {
  cluster_snapshot snap;
  policy_params p;
  p.alpha_tokens = 1u << 20;
  p.beta_tokens = 1000;
  add_node(snap, 1, role::prefill, 0, {0, 5000, 0});  // 101 is above β
  add_node(snap, 4, role::decode, 0, {0, 0});
  add_node(snap, 5, role::decode, 0, {0}, /*free HBM*/ 0);  // 500 cannot hold anything
  // Engine loads do not steer it: 400 is far busier than 401 and still comes first.
  snap.find(4)->engines[0].tok = 1u << 20;
  std::deque<request_info> waiting;
  for (uint64_t i = 0; i < 4; ++i) waiting.push_back(make_request(i, /*append*/ 1001, /*len*/ 2000));
  auto pol = make_policy("rr_pe");
  const auto out = pol->assign(snap, 1, waiting, p);
  // 100 and 102 take one request each (1001 tokens), then both are above β (1000): the fetch stops.
  CHECK(engine_pairs(out) == engine_pair_list{{100, 400}, {102, 401}});
  REQUIRE(waiting.size() == 2);
  CHECK(waiting.front().id == 2);  // the rest stays at the head, in order

  // The turn continues where it stopped: with the PEs drained, the next fetch starts at 100 and DE 400 again
  // (500 still has no HBM).
  snap.find(1)->engines[0].tok = 0;
  snap.find(1)->engines[2].tok = 0;
  const auto more = pol->assign(snap, 1, waiting, p);
  CHECK(engine_pairs(more) == engine_pair_list{{100, 400}, {102, 401}});
}

TEST_CASE("framework: no DE with HBM leaves the request at the head") {
  cluster_snapshot snap;
  policy_params p;
  p.beta_tokens = 1u << 20;
  add_node(snap, 1, role::prefill, 0, {0});
  add_node(snap, 4, role::decode, 0, {0}, /*free HBM*/ 10);
  std::deque<request_info> waiting{make_request(7, 100, 1000, /*kv bytes*/ 1000)};
  const auto out = make_policy("rr_pe")->assign(snap, 1, waiting, p);
  CHECK(out.empty());
  REQUIRE(waiting.size() == 1);
  CHECK(snap.find(1)->engines[0].tok == 0);  // nothing charged
}
