#include <doctest/doctest.h>

#include "core/cluster_config.hpp"
#include "tests/core/refused_text.hpp"
#include "core/status.hpp"

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
ep_sync = true
[hardware]
snic_gb_per_s = 50
cnic_gb_per_s = 50
dram_buffer_gb = 80
hbm_gb = 20
provider = "tcp"
de_fetch = "pull"
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
policy = "balanced_pe"
[[schedule.switch]]
at_s = 60
policy = "balanced"
[runtime]
prefetch_layers = 3
spare_staging_layers = 0
)",
                                      "test.toml");
  CHECK(c.model == "ds-27b");
  CHECK(c.backend == backend_kind::modeled);
  CHECK(c.mfu == doctest::Approx(0.35));
  CHECK(c.total_nodes() == 6);
  CHECK(c.engines_per_node == 8);
  CHECK(c.ep_sync);
  CHECK(c.snic_gb_per_s == doctest::Approx(50));
  CHECK(c.provider == "tcp");
  CHECK_FALSE(c.isolation);
  CHECK(c.store_dir == "/mnt/kv");
  CHECK(c.policy == "split");
  CHECK(c.alpha_tokens == 1000);
  CHECK(c.quota_scope == quota_scope_kind::forward);
  CHECK(c.de_fetch == de_fetch_kind::pull);
  REQUIRE(c.switches.size() == 2);
  CHECK(c.switches[1].at_s == doctest::Approx(60));
  CHECK(c.switches[1].policy == "balanced");
  CHECK(c.prefetch_layers == 3);
  CHECK(c.spare_staging_layers == 0);
}

TEST_CASE("cluster file: de_fetch = \"auto\" (the default) pulls across node processes and pushes in one") {
  const cluster_config c = parse_cluster_config("", "default");
  CHECK(c.de_fetch == de_fetch_kind::automatic);
  CHECK(resolve_de_fetch(c.de_fetch, true) == de_fetch_kind::pull);
  CHECK(resolve_de_fetch(c.de_fetch, false) == de_fetch_kind::push);
  // A kind named in the file is kept either way.
  for (bool processes : {false, true}) {
    CHECK(resolve_de_fetch(de_fetch_kind::push, processes) == de_fetch_kind::push);
    CHECK(resolve_de_fetch(de_fetch_kind::pull, processes) == de_fetch_kind::pull);
  }
  CHECK(parse_cluster_config("[hardware]\nde_fetch = \"auto\"\n", "f").de_fetch == de_fetch_kind::automatic);
}

TEST_CASE("cluster file: unknown keys, wrong types and impossible values name file, key and reason") {
  // Each bad file and a piece of the message that must name what is wrong.
  const test::refused_cases cases = {
      {"[hardware]\nsnic = 3\n", "a.toml: key 'hardware.snic': unknown key"},
      {"[modle]\n", "unknown section"},
      {"[cluster]\nprefill_nodes = \"two\"\n", "'cluster.prefill_nodes': must be an integer"},
      {"[cluster]\ndecode_nodes = 0\n", "cluster.decode_nodes"},
      {"[model]\nbackend = \"tpu\"\n", "model.backend"},
      {"[hardware]\nsnic_gb_per_s = -1\n", "hardware.snic_gb_per_s"},
      {"[[schedule.switch]]\nat_s = 3\n", "schedule.switch[0].policy"},
      {"[model\n", "a.toml:1"},
      {"[schedule]\nquota_scope = \"pass\"\n", "schedule.quota_scope"},
      {"[hardware]\nde_fetch = \"read\"\n", "'hardware.de_fetch': must be push, pull or auto (got 'read')"},
  };
  test::check_refused_text(cases, [](const char* text) { return parse_cluster_config(text, "a.toml"); });
  CHECK_THROWS_AS(load_cluster_config("/nonexistent/cluster.toml"), user_error);
}

TEST_CASE("cluster file: non-ASCII only on comment lines (toml++ must never parse it)") {
  // The fuzzer's inputs: U+FEFB in a table header, and a non-ASCII byte in a string toml++ does not see as
  // one, each reached code toml++ marks unreachable.
  CHECK_THROWS_WITH_AS(parse_cluster_config("[[0\xef\xbb\xbb", "a.toml"),
                       doctest::Contains("a.toml:1:4: byte 0xef: a cluster file is ASCII"), user_error);
  CHECK_THROWS_WITH_AS(parse_cluster_config("ll= 21\"\"\"-4\xc9\x8ao\"\"\"- \nHH_p_b", "a.toml"),
                       doctest::Contains("a.toml:1:12"), user_error);
  CHECK_THROWS_WITH_AS(parse_cluster_config("[storage]\ndir = \"caf\xc3\xa9\"\n", "a.toml"),
                       doctest::Contains("a.toml:2:11"), user_error);
  // A comment line may hold any UTF-8 (toml++ still refuses a broken sequence there).
  const auto c = parse_cluster_config("  # caf\xc3\xa9\n[model]\nname = 'tiny'\n", "a.toml");
  CHECK(c.model == "tiny");
  CHECK_THROWS_AS(parse_cluster_config("#\xff\n", "a.toml"), user_error);
  // A '#' line inside a multi-line string is string text (the fuzzer's third input); after the string ends,
  // a '#' line is a comment again. A comment after a value stays ASCII, quotes in it or not.
  CHECK_THROWS_WITH_AS(parse_cluster_config("a = \"\"\"Y\n# \xef\xaf\xbf\n\"\"\"\n", "a.toml"),
                       doctest::Contains("a.toml:2:3: byte 0xef"), user_error);
  CHECK_THROWS_WITH_AS(parse_cluster_config("a = '''Y\n# \xc3\xa9\n'''\n", "a.toml"), doctest::Contains("a.toml:2:3"),
                       user_error);
  CHECK(parse_cluster_config("[model]\nname = \"\"\"ti\\\"\"\"ny\"\"\"\n# caf\xc3\xa9\n", "a.toml").model ==
        "ti\"\"\"ny");
  CHECK_THROWS_WITH_AS(parse_cluster_config("[model]\nname = 'tiny' # \"caf\xc3\xa9", "a.toml"),
                       doctest::Contains("a.toml:2:21"), user_error);
  // Formatted back as single-line basic strings, so a ''' or """ in a string cannot end it early.
  cluster_config q;
  q.model = "a'''b\n\"\"\"c";
  CHECK(parse_cluster_config(format_cluster_config(q), "q.toml").model == q.model);
  // Other text comes as escapes, and is written back as escapes: the file parses back (node processes re-read it).
  const auto u = parse_cluster_config("[storage]\ndir = \"caf\\u00e9/\\U0010FFFF\"\n", "a.toml");
  CHECK(u.store_dir == "caf\xc3\xa9/\xf4\x8f\xbf\xbf");
  CHECK(parse_cluster_config(format_cluster_config(u), "b.toml").store_dir == u.store_dir);
}

TEST_CASE("cluster file: format_cluster_config parses back to the same configuration, every key") {
  cluster_config c;
  c.model = "models/my \"qwen\" dir\\x";
  c.backend = backend_kind::modeled;
  c.gpu = "h100";
  c.mfu = 1.0 / 3.0;
  c.seed = 123456789012345ull;
  c.prefill_nodes = 3;
  c.decode_nodes = 5;
  c.engines_per_node = 7;
  c.pe_group_nodes = 3;
  c.de_group_nodes = 5;
  c.block_tokens = 48;
  c.ep_sync = true;
  c.snic_gb_per_s = 0.1 + 0.2;
  c.cnic_gb_per_s = 12.5;
  c.dram_buffer_gb = 0.064;
  c.hbm_gb = 1e-3;
  c.prefill_hbm_gb = 2e-3;
  c.provider = "tcp";
  c.kv_share = 0.07;
  c.isolation = false;
  c.store_dir = "data/run-dualpath";
  c.capacity_gb = 2.75;
  c.fsync = true;
  c.policy = "round_robin";
  c.alpha_s = 2.5;
  c.beta_s = 4.25;
  c.alpha_tokens = 1234;
  c.beta_tokens = 5678;
  c.z_slack = 1.2;
  c.quota_ms = 123.456;
  c.quota_scope = quota_scope_kind::forward;
  c.de_fetch = de_fetch_kind::pull;
  c.switches = {{0.5, "balanced_pe"}, {9.75, "balanced_split"}};
  c.prefetch_layers = 4;
  c.spare_staging_layers = 5;
  c.max_decode_batch = 17;
  c.model_traffic_kb = 96;
  c.timeout_s = 42.5;

  const std::string text = format_cluster_config(c);
  CAPTURE(text);
  const cluster_config d = parse_cluster_config(text, "formatted");
  CHECK(d.model == c.model);
  CHECK(d.backend == c.backend);
  CHECK(d.gpu == c.gpu);
  CHECK(d.mfu == c.mfu);  // exact: doubles are written so they read back bit for bit
  CHECK(d.seed == c.seed);
  CHECK(d.prefill_nodes == c.prefill_nodes);
  CHECK(d.decode_nodes == c.decode_nodes);
  CHECK(d.engines_per_node == c.engines_per_node);
  CHECK(d.pe_group_nodes == c.pe_group_nodes);  // how node processes learn the group sizes
  CHECK(d.de_group_nodes == c.de_group_nodes);
  CHECK(d.block_tokens == c.block_tokens);
  CHECK(d.ep_sync == c.ep_sync);
  CHECK(d.snic_gb_per_s == c.snic_gb_per_s);
  CHECK(d.cnic_gb_per_s == c.cnic_gb_per_s);
  CHECK(d.dram_buffer_gb == c.dram_buffer_gb);
  CHECK(d.hbm_gb == c.hbm_gb);
  CHECK(d.prefill_hbm_gb == c.prefill_hbm_gb);
  CHECK(d.provider == c.provider);
  CHECK(d.kv_share == c.kv_share);
  CHECK(d.isolation == c.isolation);
  CHECK(d.de_fetch == c.de_fetch);
  CHECK(d.store_dir == c.store_dir);
  CHECK(d.capacity_gb == c.capacity_gb);
  CHECK(d.fsync == c.fsync);
  CHECK(d.policy == c.policy);
  CHECK(d.alpha_s == c.alpha_s);
  CHECK(d.beta_s == c.beta_s);
  CHECK(d.alpha_tokens == c.alpha_tokens);
  CHECK(d.beta_tokens == c.beta_tokens);
  CHECK(d.z_slack == c.z_slack);
  CHECK(d.quota_ms == c.quota_ms);
  CHECK(d.quota_scope == c.quota_scope);
  REQUIRE(d.switches.size() == 2);
  CHECK(d.switches[1].at_s == c.switches[1].at_s);
  CHECK(d.switches[1].policy == c.switches[1].policy);
  CHECK(d.prefetch_layers == c.prefetch_layers);
  CHECK(d.spare_staging_layers == c.spare_staging_layers);
  CHECK(d.max_decode_batch == c.max_decode_batch);
  CHECK(d.model_traffic_kb == c.model_traffic_kb);
  CHECK(d.timeout_s == c.timeout_s);
  CHECK(format_cluster_config(d) == text);
}

TEST_CASE("cluster file: the compute quota bounds one layer's attention unless told otherwise (docs/design.md §7.6)") {
  CHECK(parse_cluster_config("", "a.toml").quota_scope == quota_scope_kind::layer);
  CHECK(parse_cluster_config("[schedule]\nquota_scope = \"attention\"\n", "a.toml").quota_scope ==
        quota_scope_kind::attention);
  CHECK(parse_cluster_config("[schedule]\nquota_scope = \"layer\"\n", "a.toml").quota_scope == quota_scope_kind::layer);
  for (const auto& name : quota_scope_names())
    CHECK(to_string(value_or_throw(parse_quota_scope(name))) == std::string(name));
  CHECK_FALSE(parse_quota_scope("forwards").ok());
}

TEST_CASE("run modes: only DualPath's own modes (and the oracle) batch under the compute quota (docs/design.md §7.7)") {
  for (const char* name : {"dualpath", "round_robin", "split", "oracle"}) CHECK(run_mode_of(name).compute_quota);
  for (const char* name : {"basic", "layerwise", "dualpath_nosched"}) CHECK_FALSE(run_mode_of(name).compute_quota);
}
