// The cluster file's `[runtime] secret` (docs/design.md §13): read, checked, never written back.
#include <doctest/doctest.h>

#include "core/cluster_config.hpp"
#include "core/status.hpp"

using namespace dualpath;

TEST_CASE("cluster file: runtime.secret is read, a short one refused without echoing it, and never formatted back") {
  const auto c = parse_cluster_config("[runtime]\nsecret = \"a-secret-of-the-cluster\"\n", "test.toml");
  CHECK(c.secret == "a-secret-of-the-cluster");
  CHECK(format_cluster_config(c).find("a-secret-of-the-cluster") == std::string::npos);  // what nodes receive
  CHECK(parse_cluster_config(format_cluster_config(c), "round trip").secret.empty());
  try {
    parse_cluster_config("[runtime]\nsecret = \"short-one\"\n", "test.toml");
    FAIL("a short secret was accepted");
  } catch (const user_error& e) {
    const std::string what = e.what();
    CHECK(what.find("runtime.secret") != std::string::npos);
    CHECK(what.find("short-one") == std::string::npos);
  }
}
