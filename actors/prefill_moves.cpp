// Prefill engine, a pass's KV on the move (docs/design.md §4, §7.6): each layer's hit Layer Blocks fetched from
// the node buffers that hold them into the pass's staging slots, checked on arrival (modeled backend), and
// forwarded with the layer's new KV to the decode engines' DE buffers. The pass's control (prefill_pass.cpp)
// calls these as slots free up and layers are computed.
#include <caf/all.hpp>

#include <algorithm>

#include "actors/prefill_state.hpp"
#include "protocol/errors.hpp"

namespace dualpath::actors {

// Hit Layer Blocks of layer `fetched_next` into its staging slot, from whichever node buffer holds them.
void prefill_state::fetch_layer() {
  if (!pass || pass->aborted()) return;  // an aborted pass (perhaps settled already) does nothing more
  auto& p = *pass;
  if (p.fetched_next >= geo().layers) return;
  if (abort_if_stale()) return;
  const uint32_t layer = p.fetched_next;
  // Its staging slot is free once layer - depth is computed (the hit forward reads the PE buffer, not the slot).
  if (layer >= p.computed + p.staging.depth) return;
  // At most prefetch_layers fetches on their way, in layer order, even where every layer has its slot
  // (`basic`): fetches in flight share the links, so with all of them posted at once layer 0 landed with
  // about the last one (3 ms of a 40-ms pass on the scaled 64K ablation) and the pass waited for it.
  if (p.fetches_out >= std::max<uint32_t>(1, view().config.prefetch_layers)) return;
  p.fetched_next++;
  std::vector<const runtime::kv_sources*> sources;
  for (auto& e : p.entries) sources.push_back(&e.req->src);
  auto by_node = runtime::plan_fetch(geo(), slots(), sources, p.staging, layer, view().config.de_fetch);
  if (by_node.empty()) {
    p.fetched[layer] = true;
    return;
  }
  for (const auto& [n, ops] : by_node)
    if (is_lost(n)) return abort_pass("node " + std::to_string(n) + " was lost; this pass reads hit KV from it");
  auto remaining = std::make_shared<size_t>(by_node.size());
  ++p.fetches_out;

  for (auto& [n, ops] : by_node) {
    // Pulled (`de_fetch = "pull"`): node n's blocks, read by this engine's own node, which answers for them.
    const bool pulled = ops.front().pull();
    const uint32_t poster = pulled ? node() : n;
    if (pulled) p.pulling_from.insert(n);
    ++p.in_flight;
    ++p.fetching_from[poster];
    copy_from(
        self, poster, copy_batch{std::move(ops)},
        [this, layer, remaining, seq = p.seq, poster, own = n == node(), asked = now_ns()](uint64_t) {
          if (!fetch_returned(seq, poster)) return;
          pass->fetches.add(own, layer, (now_ns() - asked) / 1e6);
          if (--*remaining > 0) return;
          pass->fetched[layer] = true;
          pass->fetches_out--;
          forward_layer(layer, runtime::forward_part::hit);  // beside the layer's compute, not after it
          fetch_layer();
          advance();
          // Checked while the layer computes, not before it starts (a check reads the staged KV, as the
          // compute does; it only counts what differs, and the slot is reused after the compute answers).
          verify_staged(layer);
        },
        [this, seq = p.seq, poster](caf::error& err) {
          if (fetch_returned(seq, poster)) abort_pass("hit KV transfer failed: " + describe(err), kind_of(err));
        });
  }
}

// Modeled backend: every hit Layer Block is checked on arrival in HBM against the bytes its tokens imply
// (nothing once the pass is aborted: its staging may be given back), as the other moves guard themselves.
void prefill_state::verify_staged(uint32_t layer) {
  if (!pass || pass->aborted() || view().config.backend != backend_kind::modeled) return;
  const auto& g = geo();
  for (size_t k = 0; k < pass->entries.size(); ++k) {
    auto& r = *pass->entries[k].req;
    for (uint32_t b = 0; b < r.src.valid; ++b) {
      const uint32_t first = b * g.block_tokens;
      ++r.kv_verified;
      if (!gpu::modeled_kv_matches(layer, first, r.payload.tokens.data() + first, g.block_tokens,
                                   hbm->base() + pass->staging.offset(g, layer, k, b),
                                   uint32_t(g.bytes_per_token_layer)))
        ++r.kv_corrupt;
    }
  }
}

// Part of layer `layer` to the DE buffers: the PE-path hit KV of first passes once the layer is staged (it
// needs no compute, so it travels while the layer computes), the new KV once computed. The hit KV goes from
// the PE buffer slots its read filled, the new KV from the request's own HBM: neither reads the staging
// slot, which is reused as soon as its layer is computed.
void prefill_state::forward_layer(uint32_t layer, runtime::forward_part part) {
  if (!pass || pass->aborted()) return;  // an aborted pass (perhaps settled already) does nothing more
  auto& p = *pass;
  if (abort_if_stale()) return;
  std::vector<runtime::forward_entry> entries;
  for (auto& e : p.entries)
    entries.push_back({&e.req->src, e.cached, e.bsz, e.req->prompt(), e.req->new_kv->offset, e.forward_hit});
  auto by_de = runtime::plan_forward(geo(), slots(), entries, layer, part);
  if (by_de.empty()) return;
  ++p.forwards_pending;
  auto remaining = std::make_shared<size_t>(by_de.size());
  for (auto& [de, ops] : by_de) {
    ++p.in_flight;
    copy_from(
        self, node(), copy_batch{std::move(ops)},
        [this, remaining](uint64_t) {
          if (!returned() || --*remaining > 0) return;
          pass->forwards_pending--;
          advance();
        },
        [this](caf::error& err) {
          if (returned()) abort_pass("KV forwarding to the DE failed: " + describe(err), kind_of(err));
        });
  }
}

}  // namespace dualpath::actors
