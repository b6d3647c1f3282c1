// docs/design.md §7.2/§7.3 with groups of several nodes (group_layout; the paper's Figure 5): a PE group's
// nodes differ in read_q, so α decides between them; a DE group is one level-1 group over all its engines.
#include <doctest/doctest.h>

#include "schedule/policy.hpp"
#include "schedule/selection.hpp"
#include "tests/schedule/helpers.hpp"

using namespace dualpath::schedule;
using namespace dualpath::schedule::test;

namespace {
policy_params params(uint64_t alpha, uint64_t beta, group_layout groups = {}) {
  policy_params p;
  p.alpha_tokens = alpha;
  p.beta_tokens = beta;
  p.kv_bytes_per_token = 10;
  p.groups = groups;
  return p;
}
}  // namespace

TEST_CASE("group layout: node to group, and only a prefill group's first node fetches") {
  const group_layout one;
  CHECK(one.pe_group_first(5) == 5);
  CHECK(one.fetches(5));
  CHECK(one.de_group(7) != one.de_group(8));
  const group_layout two{2, 3, /*first decode node*/ 4};
  CHECK(two.pe_group_first(0) == 0);
  CHECK(two.pe_group_first(3) == 2);
  CHECK(two.fetches(2));
  CHECK_FALSE(two.fetches(3));
  CHECK(two.de_group(4) == two.de_group(6));
  CHECK(two.de_group(6) != two.de_group(7));
}

TEST_CASE("PE group of 2 nodes: the node above α loses to the node below it even with emptier engines") {
  cluster_snapshot snap;
  // α = 100 tokens = 1000 bytes of read_q.
  add_node(snap, 0, role::prefill, /*read_q*/ 5000, {0, 0});     // above α: C3
  add_node(snap, 1, role::prefill, /*read_q*/ 200, {300, 400});  // below α: C2
  add_node(snap, 2, role::decode, 0, {0});
  auto pol = make_policy("balanced");

  SUBCASE("one node per group (the default): node 0 fetches for itself, α orders nothing") {
    std::deque<request_info> waiting{make_request(1)};
    const auto out = pol->assign(snap, 0, waiting, params(100, 1000));
    REQUIRE(out.size() == 1);
    CHECK(out[0].pe == 0);
    CHECK(out[0].pe_node == 0);
  }
  SUBCASE("nodes 0 and 1 are one group: C2 on node 1 wins over C3 on node 0") {
    std::deque<request_info> waiting{make_request(1)};
    const auto out = pol->assign(snap, 0, waiting, params(100, 1000, {2, 1, 2}));
    REQUIRE(out.size() == 1);
    CHECK(out[0].pe == 100);  // tok 300, though node 0's engines hold 0
    CHECK(out[0].pe_node == 1);
    CHECK(snap.find(1)->engines[0].tok == 300 + 100);
    // The read path compares the PE's own node with the DE's: node 1 (200) against node 2 (0).
    CHECK(out[0].path == read_path::de);
  }
  SUBCASE("with both nodes above α the emptier engine wins again (C3 by tok_e)") {
    snap.find(1)->read_q = 2000;
    std::deque<request_info> waiting{make_request(1)};
    const auto out = pol->assign(snap, 0, waiting, params(100, 1000, {2, 1, 2}));
    REQUIRE(out.size() == 1);
    CHECK(out[0].pe_node == 0);
  }
}

TEST_CASE("PE group of 2 nodes: this fetch's reads count toward α, so a node pushed past α stops winning") {
  cluster_snapshot snap;
  add_node(snap, 0, role::prefill, 0, {0});
  add_node(snap, 1, role::prefill, 0, {50});
  add_node(snap, 2, role::decode, /*read_q*/ 1u << 20, {0});  // the DE path is long: every read goes via the PE
  std::deque<request_info> waiting;
  for (uint64_t i = 0; i < 3; ++i)
    waiting.push_back(make_request(i, /*append*/ 10, 1000, 1000, /*hit blocks*/ 6, /*hit bytes*/ 600));
  const auto out = make_policy("balanced")->assign(snap, 0, waiting, params(/*α = 1000 bytes*/ 100, 1000, {2, 1, 2}));
  REQUIRE(out.size() == 3);
  // r0: both nodes at 0 ≤ α, engine 0 (tok 0) wins; node 0 now reads 600.
  // r1: node 0 still ≤ α, engine 0 (tok 10 < 50) wins; node 0 reads 1200 > α.
  // r2: node 0 is C3 now, so node 1 (tok 50) wins over engine 0 (tok 20).
  CHECK(out[0].pe == 0);
  CHECK(out[1].pe == 0);
  CHECK(out[2].pe == 100);
  for (const auto& a : out) CHECK(a.path == read_path::pe);
  // The estimate pass 1 charged is gone; the reads are charged once, where the path put them.
  CHECK(snap.find(0)->read_q == 1200);
  CHECK(snap.find(1)->read_q == 600);
  CHECK(snap.find(2)->read_q == (1u << 20));
}

TEST_CASE("DE group of 2 nodes takes a request as one level-1 group; level 2 spans both nodes") {
  cluster_snapshot snap;
  add_node(snap, 0, role::prefill, 0, {0});
  // Group 0 = nodes 1, 2: Σ tok_e 1010, though node 1 alone is the least loaded node of the cluster.
  add_node(snap, 1, role::decode, 0, {10});
  add_node(snap, 2, role::decode, 0, {1000});
  // Group 1 = nodes 3, 4: Σ tok_e 600.
  add_node(snap, 3, role::decode, 0, {350});
  add_node(snap, 4, role::decode, 0, {250});
  snap.find(4)->engines[0].seq = 5;
  const auto r = make_request(1, /*append*/ 10, /*len*/ 100);
  auto pol = make_policy("balanced");

  SUBCASE("one node per group (the default): node 1 wins level 1") {
    std::deque<request_info> waiting{r};
    const auto out = pol->assign(snap, 0, waiting, params(1000, 1000));
    REQUIRE(out.size() == 1);
    CHECK(out[0].de_node == 1);
  }
  SUBCASE("two nodes per group: group 1 wins; Z = 1.05 × (100 + 600) / 2 = 367.5 keeps only node 4's engine") {
    std::deque<request_info> waiting{r};
    const auto out = pol->assign(snap, 0, waiting, params(1000, 1000, {1, 2, /*first decode node*/ 1}));
    REQUIRE(out.size() == 1);
    CHECK(out[0].de_node == 4);  // 250 + 100 ≤ Z although its seq_e is 5; node 3's 350 + 100 is over Z
    CHECK(out[0].de == 400);
    CHECK(snap.find(4)->engines[0].tok == 350);
    CHECK(snap.find(4)->engines[0].free_hbm == (1u << 30) - r.kv_bytes);
  }
  SUBCASE("level 1 skips a group none of whose engines has the HBM, level 2 finds the one that has") {
    snap.find(3)->engines[0].free_hbm = 0;
    snap.find(4)->engines[0].free_hbm = 0;
    snap.find(2)->engines[0].free_hbm = 10;  // node 1 alone can hold it
    snap.find(1)->engines[0].free_hbm = r.kv_bytes;
    std::deque<request_info> waiting{r};
    const auto out = pol->assign(snap, 0, waiting, params(1000, 1000, {1, 2, 1}));
    REQUIRE(out.size() == 1);
    CHECK(out[0].de_node == 1);
  }
}

TEST_CASE("level 2 over a group of nodes: indices count the engines of every node in order") {
  cluster_snapshot snap;
  add_node(snap, 1, role::decode, 0, {100, 100});
  add_node(snap, 2, role::decode, 0, {0});
  std::vector<node_snapshot*> group{snap.find(1), snap.find(2)};
  const auto a = make_request(1, 10, /*len*/ 50);
  // Z = 1.05 × (50 + 200) / 3 = 87.5: only node 2's engine (index 2) is under it.
  CHECK(decode_threshold(group, {&a}, 1.05) == doctest::Approx(87.5));
  const auto placed = place_in_decode_group(group, {&a}, 1.05);
  REQUIRE(placed == std::vector<int>{2});
  const engine_ref e = engine_at(group, placed[0]);
  CHECK(e.node == snap.find(2));
  CHECK(e.engine->engine == 200);
  CHECK(e.engine->tok == 50);
  CHECK(total_tok(group) == 250);
  CHECK_FALSE(engine_at(group, 3).engine);
}

TEST_CASE("round_robin and framework: a PE group of 2 nodes takes its engines in turn, node after node") {
  cluster_snapshot snap;
  add_node(snap, 0, role::prefill, 0, {0, 0});
  add_node(snap, 1, role::prefill, 0, {0});
  add_node(snap, 2, role::prefill, 0, {0});  // the next group: never chosen
  add_node(snap, 3, role::decode, 0, {0});
  for (const char* name : {"rr_queue", "rr_pe"}) {
    CAPTURE(name);
    cluster_snapshot s = snap;
    std::deque<request_info> waiting;
    for (uint64_t i = 0; i < 4; ++i) waiting.push_back(make_request(i));
    const auto out = make_policy(name)->assign(s, 1, waiting, params(1000, 1u << 20, {2, 1, 3}));
    REQUIRE(out.size() == 4);
    const uint32_t pes[] = {0, 1, 100, 0};
    const uint32_t nodes[] = {0, 0, 1, 0};
    for (size_t i = 0; i < out.size(); ++i) {
      CHECK(out[i].pe == pes[i]);
      CHECK(out[i].pe_node == nodes[i]);
    }
  }
}
