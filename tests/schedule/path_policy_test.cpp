// docs/design.md §7.4 (read path), §7.5 (split, policies by name) and the round-robin baseline.
#include <doctest/doctest.h>

#include <string>

#include "core/modes.hpp"
#include "core/status.hpp"
#include "schedule/selection.hpp"
#include "tests/schedule/helpers.hpp"

using namespace dualpath::schedule;
using namespace dualpath::schedule::test;

TEST_CASE("read path: the node with the shorter read_q, charged as requests are assigned") {
  cluster_snapshot snap;
  add_node(snap, 1, role::prefill, /*read_q*/ 25000, {0});
  add_node(snap, 5, role::decode, /*read_q*/ 0, {0});
  std::deque<request_info> waiting;
  for (uint64_t i = 0; i < 4; ++i) waiting.push_back(make_request(i, 10, 100, 10, 10, /*hit bytes*/ 10000));
  const auto out = make_policy("balanced")->assign(snap, 1, waiting, loose());
  REQUIRE(out.size() == 4);
  // DE queue 0 → 10000 → 20000 → 30000 against the PE's 25000: DE, DE, DE, then PE.
  CHECK(out[0].path == read_path::de);
  CHECK(out[0].pe_blocks == 0);
  CHECK(out[2].path == read_path::de);
  CHECK(out[3].path == read_path::pe);
  CHECK(out[3].pe_blocks == 10);
  CHECK(snap.find(1)->read_q == 35000);
  CHECK(snap.find(5)->read_q == 30000);
}

TEST_CASE("basic reads everything through the PE node") {
  cluster_snapshot snap;
  add_node(snap, 1, role::prefill, /*read_q*/ 1u << 30, {0});
  add_node(snap, 5, role::decode, 0, {0});
  std::deque<request_info> waiting{make_request(1), make_request(2)};
  const auto out = make_policy("balanced_pe")->assign(snap, 1, waiting, loose());
  REQUIRE(out.size() == 2);
  for (const auto& a : out) {
    CHECK(a.path == read_path::pe);
    CHECK(a.pe_blocks == a.request.hit_blocks);
  }
  CHECK(snap.find(5)->read_q == 0);
}

TEST_CASE("split divides the hit blocks so both SNIC queues drain together") {
  const auto r = make_request(1, 10, 100, 10, /*blocks*/ 10, /*bytes*/ 10000);
  CHECK(split_pe_blocks(r, 0, 0) == 5);
  CHECK(split_pe_blocks(r, 4000, 0) == 3);   // x = (10000 + 0 - 4000) / 2 = 3000 bytes
  CHECK(split_pe_blocks(r, 50000, 0) == 0);  // PE far behind: all through the DE
  CHECK(split_pe_blocks(r, 0, 50000) == 10);
  CHECK(split_pe_blocks(make_request(2, 10, 100, 10, 0, 0), 0, 0) == 0);

  cluster_snapshot snap;
  add_node(snap, 1, role::prefill, 4000, {0});
  add_node(snap, 5, role::decode, 0, {0});
  std::deque<request_info> waiting{r};
  const auto out = make_policy("balanced_split")->assign(snap, 1, waiting, loose());
  REQUIRE(out.size() == 1);
  CHECK(out[0].path == read_path::split);
  CHECK(out[0].pe_blocks == 3);
  CHECK(snap.find(1)->read_q == 7000);
  CHECK(snap.find(5)->read_q == 7000);
}

TEST_CASE("round_robin takes engines in turn and skips the ones that cannot take work") {
  cluster_snapshot snap;
  policy_params p = loose();
  p.beta_tokens = 1000;
  add_node(snap, 1, role::prefill, 0, {0, 5000, 0});
  add_node(snap, 4, role::decode, 0, {0, 0});
  add_node(snap, 5, role::decode, 0, {0}, /*free HBM*/ 0);
  std::deque<request_info> waiting;
  for (uint64_t i = 0; i < 4; ++i) waiting.push_back(make_request(i));
  auto pol = make_policy("rr_queue");
  const auto out = pol->assign(snap, 1, waiting, p);
  REQUIRE(out.size() == 4);
  CHECK(out[0].pe == 100);
  CHECK(out[1].pe == 102);  // 101 is above β
  CHECK(out[2].pe == 100);
  CHECK(out[0].de == 400);
  CHECK(out[1].de == 401);
  CHECK(out[2].de == 400);  // 500 has no HBM
}

TEST_CASE("alternate: engines in turn, read paths alternating whatever the read queues say") {
  cluster_snapshot snap;
  policy_params p = loose();
  add_node(snap, 1, role::prefill, 0, {0, 0});
  add_node(snap, 4, role::decode, 1u << 30, {0, 0});  // the DE node's queue is long: alternate ignores it
  std::deque<request_info> waiting;
  for (uint64_t i = 0; i < 4; ++i) waiting.push_back(make_request(i));
  auto pol = make_policy("rr_alternate");
  const auto out = pol->assign(snap, 1, waiting, p);
  REQUIRE(out.size() == 4);
  CHECK(out[0].path == read_path::pe);
  CHECK(out[1].path == read_path::de);
  CHECK(out[2].path == read_path::pe);
  CHECK(out[3].path == read_path::de);
  CHECK(out[1].pe_blocks == 0);
  CHECK(out[0].pe == 100);
  CHECK(out[1].pe == 101);
  CHECK(out[0].de == 400);
  CHECK(out[1].de == 401);
}

TEST_CASE("policies by name; an unknown name lists the known ones") {
  for (const auto& n : policy_names()) {
    CHECK(is_policy_name(n));
    CHECK(make_policy(n)->name() == n);
  }
  CHECK_FALSE(is_policy_name("fastest"));
  try {
    make_policy("fastest");
    FAIL("no error");
  } catch (const dualpath::user_error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("fastest") != std::string::npos);
    CHECK(msg.find("balanced, balanced_pe, balanced_split, rr_queue") != std::string::npos);
  }
}

TEST_CASE("no scheduler policy shares a name with a run policy; a run policy's name says what it schedules with") {
  for (const auto& n : policy_names())
    for (const auto& r : dualpath::run_policy_names()) CHECK(n != r);
  for (const auto& r : dualpath::run_policy_names()) {
    const std::string msg = dualpath::unknown_scheduler_policy(r);
    CHECK(msg.find("'" + r + "' is a run policy, which schedules with '" + dualpath::run_mode_of(r).scheduler_policy +
                   "'") != std::string::npos);
    CHECK(is_policy_name(dualpath::run_mode_of(r).scheduler_policy));
  }
}
