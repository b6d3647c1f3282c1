#include <doctest/doctest.h>

#include "core/cluster_config.hpp"
#include "core/errors.hpp"

using namespace dualpath;

TEST_CASE("cluster file: every section parses, switches keep their order") {
  const auto c = parse_cluster_config(R"(
[model]
name = "ds-27b"
backend = "modeled"
gpu = "h100"
mfu = 0.35
[cluster]
prefill_nodes = 2
decode_nodes = 4
engines_per_node = 8
block_tokens = 64
[hardware]
snic_gb_per_s = 50
cnic_gb_per_s = 50
dram_buffer_gb = 80
hbm_gb = 20
provider = "tcp"
kv_share = 0.05
isolation = false
[storage]
dir = "/mnt/kv"
capacity_gb = 1000
[schedule]
policy = "split"
alpha_tokens = 1000
quota_ms = 250
quota_scope = "forward"
[[schedule.switch]]
at_s = 30
policy = "basic"
[[schedule.switch]]
at_s = 60
policy = "dualpath"
[runtime]
prefetch_layers = 3
)",
                                      "test.toml");
  CHECK(c.model == "ds-27b");
  CHECK(c.backend == "modeled");
  CHECK(c.mfu == doctest::Approx(0.35));
  CHECK(c.total_nodes() == 6);
  CHECK(c.engines_per_node == 8);
  CHECK(c.snic_gb_per_s == doctest::Approx(50));
  CHECK(c.provider == "tcp");
  CHECK_FALSE(c.isolation);
  CHECK(c.store_dir == "/mnt/kv");
  CHECK(c.policy == "split");
  CHECK(c.alpha_tokens == 1000);
  CHECK(c.quota_scope == "forward");
  REQUIRE(c.switches.size() == 2);
  CHECK(c.switches[1].at_s == doctest::Approx(60));
  CHECK(c.switches[1].policy == "dualpath");
  CHECK(c.prefetch_layers == 3);
}

TEST_CASE("cluster file: unknown keys, wrong types and impossible values name file, key and reason") {
  CHECK_THROWS_WITH_AS(parse_cluster_config("[hardware]\nsnic = 3\n", "a.toml"),
                       doctest::Contains("a.toml: key 'hardware.snic': unknown key"), user_error);
  CHECK_THROWS_WITH_AS(parse_cluster_config("[modle]\n", "a.toml"), doctest::Contains("unknown section"), user_error);
  CHECK_THROWS_WITH_AS(parse_cluster_config("[cluster]\nprefill_nodes = \"two\"\n", "a.toml"),
                       doctest::Contains("'cluster.prefill_nodes': must be an integer"), user_error);
  CHECK_THROWS_WITH_AS(parse_cluster_config("[cluster]\ndecode_nodes = 0\n", "a.toml"),
                       doctest::Contains("cluster.decode_nodes"), user_error);
  CHECK_THROWS_WITH_AS(parse_cluster_config("[model]\nbackend = \"tpu\"\n", "a.toml"),
                       doctest::Contains("model.backend"), user_error);
  CHECK_THROWS_WITH_AS(parse_cluster_config("[hardware]\nsnic_gb_per_s = -1\n", "a.toml"),
                       doctest::Contains("hardware.snic_gb_per_s"), user_error);
  CHECK_THROWS_WITH_AS(parse_cluster_config("[[schedule.switch]]\nat_s = 3\n", "a.toml"),
                       doctest::Contains("schedule.switch[0].policy"), user_error);
  CHECK_THROWS_WITH_AS(parse_cluster_config("[model\n", "a.toml"), doctest::Contains("a.toml:1"), user_error);
  CHECK_THROWS_AS(load_cluster_config("/nonexistent/cluster.toml"), user_error);
}
