#pragma once
// The pure plans of the two engines (docs/design.md §4): which copies move a request's KV, and where it
// sits in HBM. No actors and no I/O: the engines execute these plans, tests check them directly.
//
// Prefill side. A pass holds, per entry (request), its valid hit blocks; each block sits in a DRAM buffer
// slot either on the PE node (PE read path, blocks [0, pe_blocks)) or on the DE node (DE read path, the
// rest). Hit KV is staged in HBM one layer at a time: `depth` staging slots (layers in flight), each slot
// holding layer l of every entry's valid hit blocks back to back.
#include <cstdint>
#include <map>
#include <vector>

#include "core/cluster_config.hpp"
#include "core/kv_geometry.hpp"
#include "runtime/kv_types.hpp"

namespace dualpath::runtime {

// Where one request's KV lives on both sides of the PD pair.
struct kv_sources {
  uint32_t pe = 0, pe_node = 0;    // the prefill engine and its node
  uint32_t de = 0, de_node = 0;    // the decode engine and its node
  uint32_t valid = 0;              // leading hit blocks that arrived intact (the cached prefix)
  uint32_t pe_blocks = 0;          // blocks [0, pe_blocks) were read into the PE buffer, the rest into the DE buffer
  std::vector<uint32_t> pe_slots;  // PE buffer slot of blocks [0, pe_blocks)
  std::vector<uint32_t> de_slots;  // DE buffer slot of every prompt block (hits read there, and the rest)
};

// Byte offset of a buffer slot's Full Block payload inside the node's buffer region.
struct slot_layout {
  uint64_t stride = 0;          // bytes per slot
  uint64_t payload_offset = 0;  // the Full Block's payload inside a slot
  uint64_t offset(uint32_t slot) const { return uint64_t(slot) * stride + payload_offset; }
};

// The staging area of one prefill pass: `depth` slots of `slot_bytes`, starting at `base` in the PE's HBM.
struct staging_layout {
  uint64_t base = 0;
  uint32_t depth = 1;
  uint64_t slot_bytes = 0;
  std::vector<uint64_t> entry_offset;  // per entry: where its blocks start inside a slot

  uint64_t bytes() const { return slot_bytes * depth; }
  // Offset in HBM of hit block `block` of entry `entry` for layer `layer`.
  uint64_t offset(const kv_geometry& g, uint32_t layer, size_t entry, uint32_t block) const {
    return base + (layer % depth) * slot_bytes + entry_offset[entry] + uint64_t(block) * g.layer_bytes();
  }
};

// Staging for entries with `valid_blocks[k]` hit blocks each; `depth` is clamped to [1, layers]. Base 0:
// the caller sets it once the allocation is made. At least one byte, so an all-miss pass still allocates.
staging_layout plan_staging(const kv_geometry& g, const std::vector<uint32_t>& valid_blocks, uint32_t depth);

// HBM for the new KV of a request: [layer][token][bytes] for tokens [valid·block_tokens, prompt).
uint64_t new_kv_bytes(const kv_geometry& g, uint64_t prompt_tokens, uint32_t valid_blocks);

// Layer `layer` of every entry's valid hit blocks into the staging slot, from whichever node buffer holds
// them; the copies are grouped by that node. Blocks in a decode node's buffer are pushed by it (via its
// engine), or with `de_fetch_kind::pull` read by the PE itself (via the PE, `src_engine` the DE).
std::map<uint32_t, std::vector<copy_op>> plan_fetch(const kv_geometry& g, const slot_layout& slots,
                                                    const std::vector<const kv_sources*>& entries,
                                                    const staging_layout& staging, uint32_t layer,
                                                    de_fetch_kind de_fetch = de_fetch_kind::push);

// One entry of a pass for the forward plan: which tokens this pass computed, and where its new KV is.
struct forward_entry {
  const kv_sources* src = nullptr;
  uint64_t cached = 0, bsz = 0;  // this pass computed tokens [cached, cached + bsz)
  uint64_t prompt = 0;           // prompt tokens of the request
  uint64_t new_kv_offset = 0;    // HBM offset of the request's new-KV allocation
  bool forward_hit = false;      // also send its PE-path hit blocks (the first pass of the request)
};

// Which part of a layer a forward carries: the PE-path hit KV needs no compute (the engine sends it as the layer
// is staged, so it travels beside the layer's compute), while the new KV exists only once the layer is computed
// (docs/design.md §4, the early hit forward).
enum class forward_part : uint8_t { hit, new_kv };

// Layer `layer` into each request's DE buffer: the hit KV read on the PE side (first pass only), from the PE
// buffer slots that hold it, or the new KV of the tokens this pass computed, from the PE's HBM. Grouped by
// destination DE engine (none without copies); all posted from the PE's CNIC.
std::map<uint32_t, std::vector<copy_op>> plan_forward(const kv_geometry& g, const slot_layout& slots,
                                                      const std::vector<forward_entry>& entries, uint32_t layer,
                                                      forward_part part);

// Decode side: the whole request from its DE buffer slots into its HBM pages (block b to the page at
// `hbm_pages[b]`, [layer][token][bytes]), one Full Block per slot, through the DE's own CNIC (loopback).
std::vector<copy_op> plan_hbm_load(const kv_geometry& g, const slot_layout& slots, uint32_t de_engine,
                                   const std::vector<uint32_t>& de_slots, const std::vector<uint64_t>& hbm_pages);

// HBM bytes a decode engine holds for a request of `prompt + gen` tokens: whole Full Blocks.
uint64_t decode_hbm_bytes(const kv_geometry& g, uint64_t prompt_tokens, uint32_t gen);

}  // namespace dualpath::runtime
