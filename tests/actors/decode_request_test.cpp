// A decode request's KV bookkeeping (actors/decode_request.hpp): spans over its pages, a step's new KV in its
// block, the chain keys of its Full Blocks, when its turn is over and what its answer says.
#include <doctest/doctest.h>

#include <cstring>

#include "actors/decode_request.hpp"
#include "core/block_key.hpp"

using namespace dualpath;
using actors::de_request;

namespace {

// Three layers, 4-token blocks, 2 bytes a token and layer; pages laid out in one arena-like buffer.
struct fixture {
  kv_geometry g{3, 4, 2};
  std::vector<std::byte> memory;
  de_request r;

  explicit fixture(uint32_t pages) : memory(pages * g.block_bytes()) {
    for (uint32_t p = 0; p < pages; ++p) {
      // Pages out of order in memory, as a paged arena hands them out.
      const uint64_t at = uint64_t(pages - 1 - p) * g.block_bytes();
      r.pages.push_back({at, g.block_bytes(), memory.data() + at});
    }
  }
};

}  // namespace

TEST_CASE("decode request: spans follow the pages, a new page a new span, every layer at its offset") {
  fixture f(3);
  f.r.position = 6;
  actors::extend_spans(f.r, f.g);
  REQUIRE(f.r.spans.size() == 3);
  for (uint32_t l = 0; l < 3; ++l) {
    REQUIRE(f.r.spans[l].size() == 2);
    CHECK(f.r.spans[l][0].data == f.r.pages[0].data + f.g.offset_in_block(l, 0));
    CHECK(f.r.spans[l][0].tokens == 4);
    CHECK(f.r.spans[l][1].data == f.r.pages[1].data + f.g.offset_in_block(l, 0));
    CHECK(f.r.spans[l][1].tokens == 2);
  }
  // Two steps later the last span grew; one more token opens the third page.
  f.r.position = 8;
  actors::extend_spans(f.r, f.g);
  CHECK(f.r.spans[1].size() == 2);
  CHECK(gpu::span_tokens(f.r.spans[1]) == 8);
  f.r.position = 9;
  actors::extend_spans(f.r, f.g);
  CHECK(f.r.spans[2].size() == 3);
  CHECK(f.r.spans[2][2].data == f.r.pages[2].data + f.g.offset_in_block(2, 0));
  // Spans lent to a step and not given back are built anew, not extended from nothing.
  f.r.spans.clear();
  actors::extend_spans(f.r, f.g);
  CHECK(gpu::span_tokens(f.r.spans[0]) == 9);
  CHECK(f.r.spans[0].size() == 3);
}

TEST_CASE("decode request: a step's new KV lands in its block, layer by layer, and the position moves on") {
  fixture f(2);
  f.r.position = 5;  // the fed token is the second of block 1
  const std::byte made[6] = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}, std::byte{5}, std::byte{6}};
  actors::append_token_kv(f.r, f.g, made);
  CHECK(f.r.position == 6);
  for (uint32_t l = 0; l < 3; ++l)
    CHECK(std::memcmp(f.r.pages[1].data + f.g.offset_in_block(l, 1), made + 2 * l, 2) == 0);
  // Nothing else of either page was written.
  uint32_t nonzero = 0;
  for (auto b : f.memory) nonzero += b != std::byte{0};
  CHECK(nonzero == 6);
}

TEST_CASE("decode request: Full Block keys as the store names them, grown as tokens fill blocks") {
  fixture f(3);
  f.r.sequence = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  f.r.position = 7;
  actors::key_full_blocks(f.r, f.g);
  CHECK(f.r.keys.size() == 1);
  f.r.position = 10;
  actors::key_full_blocks(f.r, f.g);
  CHECK(f.r.keys == block_keys(f.r.sequence, 4));
  CHECK(f.r.keys.size() == 2);
}

TEST_CASE("decode request: a turn is over at its length or at a stop token; its answer carries its counts") {
  fixture f(1);
  f.r.info.payload.gen = 3;
  f.r.info.payload.stop_tokens = {99};
  f.r.generated = {1};
  CHECK_FALSE(actors::turn_over(f.r));
  f.r.generated.push_back(99);
  CHECK(actors::turn_over(f.r));
  f.r.generated = {1, 2, 3};
  CHECK(actors::turn_over(f.r));

  f.r.info.payload.request = 7;
  f.r.info.payload.agent = 2;
  f.r.info.payload.tokens = {1, 2, 3, 4, 5};
  f.r.info.valid_hit_blocks = 1;
  f.r.info.kv_verified = 12;
  f.r.info.payload.times.first_token = 100;
  const auto res = actors::result_of(f.r, 250);
  CHECK(res.request == 7);
  CHECK(res.agent == 2);
  CHECK(res.generated == f.r.generated);
  CHECK(res.prompt_tokens == 5);
  CHECK(res.valid_hit_blocks == 1);
  CHECK(res.kv_verified == 12);
  CHECK(res.times.first_token == 100);
  CHECK(res.times.done == 250);
  CHECK(res.times.last_token == 250);
  CHECK(actors::page_offsets(f.r) == std::vector<uint64_t>{0});
}
