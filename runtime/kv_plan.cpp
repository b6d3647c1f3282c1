#include "runtime/kv_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dualpath::runtime {

namespace {

// Where Layer Block `layer` of the Full Block in buffer slot `slot` starts, inside the node's buffer region.
uint64_t layer_in_slot(const kv_geometry& g, const slot_layout& slots, uint32_t slot, uint32_t layer) {
  return slots.offset(slot) + g.offset_in_block(layer, 0);
}

}  // namespace

staging_layout plan_staging(const kv_geometry& g, const std::vector<uint32_t>& valid_blocks, uint32_t depth) {
  staging_layout s;
  s.depth = std::max<uint32_t>(1, std::min(depth, g.layers));
  uint64_t blocks = 0;
  for (uint32_t v : valid_blocks) {
    s.entry_offset.push_back(blocks * g.layer_bytes());
    blocks += v;
  }
  s.slot_bytes = std::max<uint64_t>(blocks * g.layer_bytes(), 1);
  return s;
}

uint64_t new_kv_bytes(const kv_geometry& g, uint64_t prompt_tokens, uint32_t valid_blocks) {
  const uint64_t hit_tokens = std::min<uint64_t>(prompt_tokens, uint64_t(valid_blocks) * g.block_tokens);
  return std::max<uint64_t>((prompt_tokens - hit_tokens) * g.layers * g.bytes_per_token_layer, 1);
}

std::map<uint32_t, std::vector<copy_op>> plan_fetch(const kv_geometry& g, const slot_layout& slots,
                                                    const std::vector<const kv_sources*>& entries,
                                                    const staging_layout& staging, uint32_t layer,
                                                    de_fetch_kind de_fetch) {
  std::map<uint32_t, std::vector<copy_op>> by_node;
  for (size_t k = 0; k < entries.size(); ++k) {
    const kv_sources& r = *entries[k];
    for (uint32_t b = 0; b < r.valid; ++b) {
      // A block read on the PE node is copied by the PE's own CNIC (loopback); one read on the DE node is
      // pushed by the DE's CNIC over the compute network, or pulled by the PE's: that is the second read path.
      const bool from_pe = b < r.pe_blocks;
      const bool pull = !from_pe && de_fetch == de_fetch_kind::pull;
      copy_op op;
      op.via = from_pe || pull ? r.pe : r.de;
      if (pull) op.src_engine = r.de;
      op.src_kind = region_kind::buffer;
      op.src_offset = layer_in_slot(g, slots, from_pe ? r.pe_slots.at(b) : r.de_slots.at(b), layer);
      op.dst_engine = r.pe;
      op.dst_kind = region_kind::hbm;
      op.dst_offset = staging.offset(g, layer, k, b);
      op.length = g.layer_bytes();
      by_node[from_pe ? r.pe_node : r.de_node].push_back(op);
    }
  }
  return by_node;
}

std::map<uint32_t, std::vector<copy_op>> plan_forward(const kv_geometry& g, const slot_layout& slots,
                                                      const std::vector<forward_entry>& entries, uint32_t layer,
                                                      forward_part part) {
  std::map<uint32_t, std::vector<copy_op>> by_de;
  for (size_t k = 0; k < entries.size(); ++k) {
    const forward_entry& e = entries[k];
    const kv_sources& r = *e.src;
    if (part == forward_part::hit) {
      if (!e.forward_hit) continue;
      // PE path: the DE buffer has not seen these hit blocks yet. (DE path: they were read there.) They go
      // from the PE buffer slot the read filled, not from the staging slot, so the staging slot is free as
      // soon as its layer is computed (docs/design.md §4, step 5).
      for (uint32_t b = 0; b < std::min(r.valid, r.pe_blocks); ++b)
        by_de[r.de].push_back({r.pe, region_kind::buffer, layer_in_slot(g, slots, r.pe_slots.at(b), layer), r.de,
                               region_kind::buffer, layer_in_slot(g, slots, r.de_slots.at(b), layer), g.layer_bytes()});
      continue;
    }
    auto& ops = by_de[r.de];
    const uint64_t hit_tokens = uint64_t(r.valid) * g.block_tokens;
    const uint64_t new_tokens = e.prompt - hit_tokens;
    const uint64_t layer_base = e.new_kv_offset + layer * new_tokens * g.bytes_per_token_layer;
    for (const auto& run : token_runs(g, e.cached, e.cached + e.bsz)) {
      ops.push_back({r.pe, region_kind::hbm, layer_base + (run.first - hit_tokens) * g.bytes_per_token_layer, r.de,
                     region_kind::buffer,
                     slots.offset(r.de_slots.at(run.block)) + g.offset_in_block(layer, run.token_in_block),
                     uint64_t(run.count) * g.bytes_per_token_layer});
    }
  }
  for (auto it = by_de.begin(); it != by_de.end();) it = it->second.empty() ? by_de.erase(it) : std::next(it);
  return by_de;
}

std::vector<copy_op> plan_hbm_load(const kv_geometry& g, const slot_layout& slots, uint32_t de_engine,
                                   const std::vector<uint32_t>& de_slots, const std::vector<uint64_t>& hbm_pages) {
  if (hbm_pages.size() < de_slots.size())
    throw std::invalid_argument("plan_hbm_load: " + std::to_string(de_slots.size()) + " blocks for " +
                                std::to_string(hbm_pages.size()) + " HBM pages");
  std::vector<copy_op> ops;
  for (size_t b = 0; b < de_slots.size(); ++b)
    ops.push_back({de_engine, region_kind::buffer, slots.offset(de_slots[b]), de_engine, region_kind::hbm, hbm_pages[b],
                   g.block_bytes()});
  return ops;
}

uint64_t decode_hbm_bytes(const kv_geometry& g, uint64_t prompt_tokens, uint32_t gen) {
  return uint64_t(g.blocks_for(prompt_tokens + gen)) * g.block_bytes();
}

}  // namespace dualpath::runtime
