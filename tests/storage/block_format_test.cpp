#include <doctest/doctest.h>

#include <cstring>

#include "core/status.hpp"
#include "storage/block_format.hpp"
#include "test_util.hpp"

using namespace dualpath;
using namespace dualpath::storage;

TEST_CASE("a Full Block image round-trips and every layer slice verifies alone") {
  for (auto f : {test::small_format(1, 1, 64, 8), test::small_format(2, 61, 64, 656), test::small_format(3, 7, 3, 5)}) {
    const auto payload = test::payload_for(f, 42);
    const auto image = build_block(f, 42, 7, payload.data());
    REQUIRE(image.size() == f.file_bytes());
    CHECK(image.size() % block_alignment == 0);
    block_header h;
    CHECK(check_block(image.data(), image.size(), f, 42, &h).ok());
    CHECK(h.parent == 7);
    CHECK(h.layer_checksums.size() == f.layers);
    CHECK(std::memcmp(image.data() + f.header_bytes(), payload.data(), payload.size()) == 0);
    for (uint32_t l = 0; l < f.layers; ++l)
      CHECK(check_layer(h, l, image.data() + f.header_bytes() + l * f.layer_bytes()));
  }
}

TEST_CASE("a flipped byte in any layer slice or in the header is detected") {
  const auto f = test::small_format(9, 5, 8, 16);
  const auto payload = test::payload_for(f, 5);
  const auto good = build_block(f, 5, 0, payload.data());
  for (uint32_t l = 0; l < f.layers; ++l) {
    auto bad = good;
    bad[f.header_bytes() + l * f.layer_bytes() + (l * 37) % f.layer_bytes()] ^= std::byte{0x01};
    CHECK(check_block(bad.data(), bad.size(), f, 5).message == "layer " + std::to_string(l) + " checksum");
  }
  auto bad_header = good;
  bad_header[72] ^= std::byte{0x80};  // first layer checksum
  CHECK(check_block(bad_header.data(), bad_header.size(), f, 5).message == "header checksum");
  auto bad_parent = good;
  bad_parent[48] ^= std::byte{0x01};
  CHECK(check_block(bad_parent.data(), bad_parent.size(), f, 5).message == "header checksum");
}

TEST_CASE("a block of another model, layout or key is refused") {
  const auto f = test::small_format(100);
  const auto image = build_block(f, 11, 0, test::payload_for(f, 11).data());
  CHECK(check_block(image.data(), image.size(), test::small_format(101), 11).message == "wrong fingerprint");
  CHECK(check_block(image.data(), image.size(), test::small_format(100, 4, 16, 64), 11).message == "wrong layout");
  CHECK(check_block(image.data(), image.size(), f, 12).message == "wrong key");
  CHECK(check_block(image.data(), f.header_bytes(), f, 11).message == "truncated payload");
  CHECK(check_block(image.data(), 16, f, 11).message == "truncated header");
}

TEST_CASE("an empty layout is bad input") {
  CHECK_THROWS_AS(test::small_format(1, 0).validate(), user_error);
  CHECK_THROWS_AS(test::small_format(1, 4, 0).validate(), user_error);
  CHECK_NOTHROW(test::small_format().validate());
}
