// Chained block keys (core/block_key.hpp): a sequence keyed as it grows has the keys of the whole sequence.
#include <doctest/doctest.h>

#include <vector>

#include "core/block_key.hpp"

using namespace dualpath;

TEST_CASE("block keys: extended piece by piece, a growing sequence gets the keys of the whole, full blocks only") {
  std::vector<int32_t> tokens;
  for (int32_t t = 0; t < 23; ++t) tokens.push_back(t * 7 + 1);
  std::vector<block_key> grown;
  for (size_t n : {0, 3, 4, 5, 9, 16, 16, 23}) extend_block_keys(grown, tokens.data(), n, 4);
  CHECK(grown == block_keys(tokens, 4));
  CHECK(grown.size() == 5);  // 23 tokens: five full blocks of 4, three left over
  // Each key chains on its parent: the same block after another prefix has another key.
  CHECK(grown[1] == chain_key(grown[0], tokens.data() + 4, 4));
  CHECK(grown[1] != chain_key(0, tokens.data() + 4, 4));
}
