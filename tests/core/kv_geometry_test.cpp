// KV geometry: where each token of each layer lives inside a Full Block.
#include <doctest/doctest.h>

#include "core/kv_geometry.hpp"

using namespace dualpath;

TEST_CASE("token runs split positions at block boundaries") {
  kv_geometry g{2, 16, 8};
  const auto runs = token_runs(g, 10, 40);
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].block == 0);
  CHECK(runs[0].token_in_block == 10);
  CHECK(runs[0].count == 6);
  CHECK(runs[1].block == 1);
  CHECK(runs[1].count == 16);
  CHECK(runs[2].block == 2);
  CHECK(runs[2].count == 8);
  CHECK(g.offset_in_block(1, 3) == 16 * 8 + 3 * 8);
}
