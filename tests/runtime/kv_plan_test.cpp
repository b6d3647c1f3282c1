// The engines' pure plans: where hit KV is staged in HBM, which copies fetch a layer from either read path,
// which copies forward a layer to the DE buffer, and how a DE loads a request into HBM.
#include <doctest/doctest.h>

#include "runtime/kv_plan.hpp"

using namespace dualpath;
using namespace dualpath::runtime;

namespace {
const kv_geometry g{4, 16, 8};  // 4 layers, 16-token blocks, 8 bytes per token and layer: layer_bytes 128
const slot_layout slots{4096, 64};

kv_sources sources(uint32_t valid, uint32_t pe_blocks) {
  kv_sources s;
  s.pe = 1;
  s.pe_node = 0;
  s.de = 5;
  s.de_node = 2;
  s.valid = valid;
  s.pe_blocks = pe_blocks;
  for (uint32_t b = 0; b < pe_blocks; ++b) s.pe_slots.push_back(10 + b);
  for (uint32_t b = 0; b < 6; ++b) s.de_slots.push_back(20 + b);
  return s;
}
}  // namespace

TEST_CASE("staging: depth slots of every entry's valid hit blocks, one layer each, back to back") {
  const auto s = plan_staging(g, {2, 0, 3}, 2);
  CHECK(s.depth == 2);
  CHECK(s.slot_bytes == 5 * g.layer_bytes());
  CHECK(s.entry_offset == std::vector<uint64_t>{0, 2 * 128, 2 * 128});
  CHECK(s.bytes() == 2 * 5 * 128);
  // Layer 3 lands in slot 1 (3 % 2); entry 2's block 1 sits after entry 0's two blocks.
  CHECK(s.offset(g, 3, 2, 1) == 1 * 640 + 256 + 128);
  CHECK(plan_staging(g, {1}, 99).depth == 4);  // never more slots than layers
  CHECK(plan_staging(g, {1}, 0).depth == 1);
  CHECK(plan_staging(g, {0, 0}, 2).slot_bytes == 1);  // an all-miss pass still allocates
}

TEST_CASE("new KV covers the tokens past the valid hit blocks, every layer") {
  CHECK(new_kv_bytes(g, 40, 2) == (40 - 32) * 4 * 8);
  CHECK(new_kv_bytes(g, 40, 0) == 40 * 4 * 8);
  CHECK(decode_hbm_bytes(g, 40, 10) == 4 * g.block_bytes());  // 50 tokens: 4 whole blocks
}

TEST_CASE("fetch: PE-path blocks via the PE's own CNIC from its buffer, DE-path blocks pushed by the DE") {
  const auto split = sources(3, 2);  // blocks 0-1 read on the PE node, block 2 on the DE node
  const auto staging = plan_staging(g, {3}, 2);
  const auto by_node = plan_fetch(g, slots, {&split}, staging, 1);
  REQUIRE(by_node.size() == 2);
  const auto& pe = by_node.at(0);
  REQUIRE(pe.size() == 2);
  CHECK(pe[0].via == 1);
  CHECK(pe[0].src_kind == region_kind::buffer);
  CHECK(pe[0].src_offset == slots.offset(10) + 1 * 128);
  CHECK(pe[0].dst_engine == 1);
  CHECK(pe[0].dst_kind == region_kind::hbm);
  CHECK(pe[0].dst_offset == staging.offset(g, 1, 0, 0));
  CHECK(pe[1].src_offset == slots.offset(11) + 128);
  const auto& de = by_node.at(2);
  REQUIRE(de.size() == 1);
  CHECK(de[0].via == 5);
  CHECK(de[0].src_offset == slots.offset(22) + 128);  // the DE buffer slot of block 2
  CHECK(de[0].dst_engine == 1);
  CHECK(de[0].dst_offset == staging.offset(g, 1, 0, 2));
  CHECK(de[0].length == 128);
  const auto none = sources(0, 0);
  CHECK(plan_fetch(g, slots, {&none}, plan_staging(g, {0}, 2), 0).empty());

  // Pulled: the DE-path block is read by the PE (via its CNIC) from the DE's buffer into the same place; the
  // PE-path blocks are as before.
  const auto pulled = plan_fetch(g, slots, {&split}, staging, 1, de_fetch_kind::pull);
  REQUIRE(pulled.size() == 2);
  const auto& own = pulled.at(0);
  REQUIRE(own.size() == 2);
  CHECK_FALSE(own[0].pull());
  CHECK_FALSE(own[1].pull());
  REQUIRE(pulled.at(2).size() == 1);
  const auto& read = pulled.at(2)[0];
  CHECK(read.pull());
  CHECK(read.via == 1);
  CHECK(read.src_engine == 5);
  CHECK(read.src_offset == slots.offset(22) + 128);
  CHECK(read.dst_engine == 1);
  CHECK(read.dst_offset == staging.offset(g, 1, 0, 2));
  CHECK(read.length == 128);
}

TEST_CASE("forward: the first pass sends PE-path hit blocks too, apart; new KV is cut at block boundaries") {
  const auto src = sources(2, 1);  // block 0 via the PE, block 1 via the DE
  // Prompt of 70 tokens, 32 hit: this pass computes [32, 56), the new KV starts at HBM offset 9000.
  forward_entry e{&src, 32, 24, 70, 9000, true};
  const auto hits = plan_forward(g, slots, {e}, 2, forward_part::hit);
  REQUIRE(hits.size() == 1);
  REQUIRE(hits.at(5).size() == 1);  // block 0 only: block 1 was read into the DE buffer already
  const auto& hit = hits.at(5)[0];
  CHECK(hit.via == 1);                         // posted by the PE
  CHECK(hit.src_kind == region_kind::buffer);  // hit block 0 from its PE buffer slot to its DE slot
  CHECK(hit.src_offset == slots.offset(10) + 2 * 128);
  CHECK(hit.dst_offset == slots.offset(20) + 2 * 128);
  CHECK(hit.length == 128);
  auto by_de = plan_forward(g, slots, {e}, 2, forward_part::new_kv);
  REQUIRE(by_de.size() == 1);
  const auto& ops = by_de.at(5);
  REQUIRE(ops.size() == 2);
  const uint64_t layer_base = 9000 + 2 * (70 - 32) * 8;
  CHECK(ops[0].src_offset == layer_base);  // tokens 32..47: block 2, from its first token
  CHECK(ops[0].dst_offset == slots.offset(22) + g.offset_in_block(2, 0));
  CHECK(ops[0].length == 16 * 8);
  CHECK(ops[1].src_offset == layer_base + 16 * 8);  // tokens 48..55: block 3
  CHECK(ops[1].dst_offset == slots.offset(23) + g.offset_in_block(2, 0));
  CHECK(ops[1].length == 8 * 8);
  e.forward_hit = false;  // a later pass of a chunked prefill: no hit KV to send
  CHECK(plan_forward(g, slots, {e}, 2, forward_part::hit).empty());
  CHECK(plan_forward(g, slots, {e}, 2, forward_part::new_kv).at(5).size() == 2);
}

TEST_CASE("decode load: one Full Block per DE slot into the request's HBM page of that block") {
  const auto ops = plan_hbm_load(g, slots, 5, {7, 3}, {9000, 1000, 4000});  // a page more, for the generation
  REQUIRE(ops.size() == 2);
  CHECK(ops[1].via == 5);
  CHECK(ops[1].dst_engine == 5);
  CHECK(ops[0].src_offset == slots.offset(7));
  CHECK(ops[0].dst_offset == 9000);
  CHECK(ops[1].src_offset == slots.offset(3));
  CHECK(ops[1].dst_offset == 1000);
  CHECK(ops[1].length == g.block_bytes());
  CHECK_THROWS_AS(plan_hbm_load(g, slots, 5, {7, 3}, {9000}), std::invalid_argument);  // fewer pages than blocks
}
