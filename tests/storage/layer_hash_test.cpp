// The blocks' checksum (storage/layer_hash.hpp): its AVX2 form gives the library's xxh3 value for every
// length and alignment, so a block written on one CPU verifies on any other.
#include <doctest/doctest.h>
#include <xxhash.h>

#include <cstdint>
#include <random>
#include <vector>

#include "storage/layer_hash.hpp"

TEST_CASE("layer_hash equals the xxhash library's XXH3_64bits at every length class and alignment") {
  std::mt19937_64 rng(7);
  std::vector<unsigned char> data((1 << 20) + 64);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  // xxh3's code paths change at 16, 128 and 240 bytes and at each 1 KiB stripe block; one MiB is a layer.
  const std::vector<size_t> lengths = {0,   1,   3,   4,    8,    9,    16,   17,    128,   129,    240,
                                       241, 255, 256, 1023, 1024, 1025, 4096, 65535, 65536, 1 << 20};
  for (size_t len : lengths)
    for (size_t offset : {0, 1, 7, 32}) {
      CAPTURE(len);
      CAPTURE(offset);
      CHECK(dualpath::storage::layer_hash(data.data() + offset, len) == XXH3_64bits(data.data() + offset, len));
    }
  CHECK(dualpath::storage::layer_hash(data.data(), 4096) != dualpath::storage::layer_hash(data.data() + 1, 4096));
}
