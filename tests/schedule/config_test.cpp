// The [schedule] section of a cluster file.
#include <doctest/doctest.h>

#include "core/errors.hpp"
#include "schedule/config.hpp"

using namespace dualpath;
using namespace dualpath::schedule;

TEST_CASE("schedule config: policy, overrides and scripted switches") {
  const auto c = parse_schedule_config(R"(
[schedule]
policy = "split"
beta_tokens = 5000
quota_ms = 250
[[schedule.switch]]
at_s = 30
policy = "basic"
[[schedule.switch]]
at_s = 10.5
policy = "round_robin"
)", "cluster.toml");
  CHECK(c.policy == "split");
  CHECK(c.quota_s == doctest::Approx(0.25));
  REQUIRE(c.switches.size() == 2);
  CHECK(c.switches[0].at_s == 10.5);
  CHECK(c.switches[0].policy == "round_robin");
  CHECK(c.switches[1].policy == "basic");
  // β from the file, α calibrated: 50 GB/s × 3 s / 1000 B per token.
  const auto p = c.params(50e9, 1000, 1e6);
  CHECK(p.beta_tokens == 5000);
  CHECK(p.alpha_tokens == 150000000);
  CHECK(parse_schedule_config("", "empty.toml").policy == "dualpath");
}

TEST_CASE("schedule config: bad input names the key and the file") {
  CHECK_THROWS_WITH_AS(parse_schedule_config("[schedule]\npolicy = \"fast\"\n", "c.toml"),
                       doctest::Contains("c.toml: schedule.policy: unknown scheduling policy 'fast' (known: dualpath"),
                       user_error);
  CHECK_THROWS_WITH_AS(parse_schedule_config("[[schedule.switch]]\nat_s = 3\n", "c.toml"),
                       doctest::Contains("schedule.switch[0] needs at_s and policy"), user_error);
  CHECK_THROWS_WITH_AS(parse_schedule_config("[schedule]\nalpha = 3\n", "c.toml"),
                       doctest::Contains("unknown key schedule.alpha"), user_error);
  CHECK_THROWS_WITH_AS(parse_schedule_config("[schedule]\nbeta_tokens = \"x\"\n", "c.toml"),
                       doctest::Contains("schedule.beta_tokens must be a number"), user_error);
  CHECK_THROWS_AS(parse_schedule_config("[schedule\n", "c.toml"), user_error);
}
