// `[cluster] ep_sync` end to end (docs/design.md §7.6, §15): the prefill engines of a node run their passes
// in EP rounds and end every layer together; tokens stay those of a full recompute, tight HBM makes passes
// wait without deadlocking a round, and the run report carries the rounds' attention max/avg.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cluster/cluster.hpp"
#include "core/status.hpp"
#include "runtime_fixtures.hpp"

using namespace runtime_fixtures;  // with dualpath, dualpath::cluster and fs

namespace {

run_summary run_ep(const cluster_config& c, const std::string& policy, uint32_t agents, uint32_t turns) {
  run_options o;
  o.config = c;
  o.policy = policy;
  o.scripts = scripts(agents, turns, 1);
  return run_cluster(o);
}

cluster_config ep_cluster(const test::scratch_dir& dir, uint32_t engines) {
  auto c = small_cluster(dir.path, 1);
  c.engines_per_node = engines;
  c.ep_sync = true;
  return c;
}

}  // namespace

TEST_CASE("ep_sync on 1P1D with 2 engines per node: every turn matches a full recompute, rounds are reported") {
  test::scratch_dir dir;
  const auto s = run_ep(ep_cluster(dir, 2), "dualpath", 4, 3);
  check_turns_right(s, 12, 12);
  REQUIRE(s.ep.enabled);
  CHECK(s.ep.rounds.size() > 0);
  for (const auto& r : s.ep.rounds) {
    CHECK(r.group == 0);
    CHECK(r.members >= 1);
    CHECK(r.members <= 2);
    CHECK(r.max_over_avg >= 1.0 - 1e-9);  // max over a mean of two engines: between 1 and 2
    CHECK(r.max_over_avg <= 2.0 + 1e-9);
    CHECK(r.t_s >= 0);
  }
  CHECK(s.ep.max_over_avg_mean >= 1.0);
  const auto j = to_json(s);
  REQUIRE(j.contains("ep_rounds"));
  CHECK(j["ep_rounds"]["rounds"].get<size_t>() == s.ep.rounds.size());
  CHECK(j["ep_rounds"]["series"].size() == s.ep.rounds.size());
}

TEST_CASE("ep_sync with 4 engines and an HBM so small that passes wait for memory: no deadlock, tokens right") {
  test::scratch_dir dir;
  auto c = ep_cluster(dir, 4);
  c.hbm_gb = 0.0005;  // about one request's KV per engine (as the runtime test of bounded memory)
  c.dram_buffer_gb = 0.0005;
  const auto s = run_ep(c, "dualpath", 6, 3);
  check_turns_right(s, 18, 18);
  CHECK(s.ep.rounds.size() > 0);
}

TEST_CASE("ep_sync off: no rounds in the report") {
  test::scratch_dir dir;
  auto c = small_cluster(dir.path, 1);
  c.engines_per_node = 2;
  const auto s = run_ep(c, "basic", 2, 2);
  check_turns_right(s, 4, 4);
  CHECK_FALSE(s.ep.enabled);
  CHECK_FALSE(to_json(s).contains("ep_rounds"));
}

TEST_CASE("ep_sync is refused with --processes") {
  test::scratch_dir dir;
  run_options o;
  o.config = ep_cluster(dir, 2);
  o.policy = "dualpath";
  o.processes = true;
  o.node_program = "/bin/false";
  o.scripts = scripts(1, 1, 1);
  CHECK_THROWS_AS(run_cluster(o), user_error);
  try {
    run_cluster(o);
  } catch (const user_error& e) {
    CHECK(std::string(e.what()).find("ep_sync") != std::string::npos);
  }
}
