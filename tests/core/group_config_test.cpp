// docs/design.md §13: [cluster] pe_group_nodes and de_group_nodes, the nodes of one scheduling group (§7.2, §7.3).
#include <doctest/doctest.h>

#include "core/cluster_config.hpp"
#include "tests/core/refused_text.hpp"
#include "core/status.hpp"

using namespace dualpath;

TEST_CASE("cluster file: group sizes default to one node and parse when they divide the node counts") {
  const cluster_config d = parse_cluster_config("", "empty.toml");
  CHECK(d.pe_group_nodes == 1);
  CHECK(d.de_group_nodes == 1);

  const cluster_config c = parse_cluster_config(
      "[cluster]\nprefill_nodes = 4\ndecode_nodes = 6\npe_group_nodes = 2\nde_group_nodes = 3\n", "g.toml");
  CHECK(c.pe_group_nodes == 2);
  CHECK(c.de_group_nodes == 3);
}

TEST_CASE("cluster file: a group size that does not divide its node count is refused with key and reason") {
  const test::refused_cases cases = {
      {"[cluster]\nprefill_nodes = 3\npe_group_nodes = 2\n",
       "g.toml: key 'cluster.pe_group_nodes': must divide prefill_nodes (3), got 2"},
      {"[cluster]\ndecode_nodes = 2\nde_group_nodes = 4\n",
       "key 'cluster.de_group_nodes': must divide decode_nodes (2), got 4"},
      {"[cluster]\npe_group_nodes = 0\n", "key 'cluster.pe_group_nodes': must be at least 1"},
      {"[cluster]\nde_group_nodes = 0\n", "key 'cluster.de_group_nodes': must be at least 1"},
      {"[cluster]\nde_group_nodes = -2\n", "cluster.de_group_nodes"},
  };
  test::check_refused_text(cases, [](const char* text) { return parse_cluster_config(text, "g.toml"); });
  // validate_cluster_config is what a launcher's edited configuration goes through too.
  cluster_config c;
  c.prefill_nodes = 2;
  c.pe_group_nodes = 4;
  CHECK_THROWS_WITH_AS(validate_cluster_config(c, "edited"), doctest::Contains("cluster.pe_group_nodes"), user_error);
}
