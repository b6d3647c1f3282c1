// Groups of several nodes (docs/design.md §7.2, §7.3) on the real runtime: 2P2D with one PE group of both
// prefill nodes (only node 0's leader fetches, for engines on both nodes) and one DE group of both decode nodes.
#include <doctest/doctest.h>

#include "runtime_fixtures.hpp"

using namespace runtime_fixtures;  // with dualpath, dualpath::cluster and fs

namespace {

cluster_config grouped_2p2d(const fs::path& dir) {
  cluster_config c = small_cluster(dir, 2);
  c.prefill_nodes = 2;
  c.pe_group_nodes = 2;
  c.de_group_nodes = 2;
  return c;
}

run_summary run(const cluster_config& c, const std::string& policy) {
  run_options o;
  o.config = c;
  o.policy = policy;
  o.scripts = scripts(4, 4, 1);
  return run_cluster(o);
}

}  // namespace

TEST_CASE("2P2D, pe_group_nodes = 2, de_group_nodes = 2: every turn matches a full recompute") {
  test::scratch_dir dir;
  for (const std::string policy : {"dualpath", "basic"}) {
    CAPTURE(policy);
    const auto s = run(grouped_2p2d(dir.path / policy), policy);
    check_turns_right(s, 16, 16);
    REQUIRE(s.snic_bytes.size() == 4);
    MESSAGE(policy << ": JCT " << s.jct_s << " s, SNIC bytes per node " << s.snic_bytes[0] << " " << s.snic_bytes[1]
                   << " " << s.snic_bytes[2] << " " << s.snic_bytes[3] << ", paths pe/de/split " << s.path_pe << "/"
                   << s.path_de << "/" << s.path_split);
    CHECK(s.hit_blocks > 0);
    if (policy == "basic") {
      // Every read goes through the PE node's SNIC: node 1 read, so its engine took work though its own
      // leader never fetches (node 0's fetch placed it).
      CHECK(s.snic_bytes[1] > 0);
      CHECK(s.snic_bytes[2] + s.snic_bytes[3] == 0);
    }
  }
}
