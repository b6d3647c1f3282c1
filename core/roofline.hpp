#pragma once
// The roofline compute model of docs/design.md §6: one layer of a forward pass takes
//   max(FLOPs / (peak · MFU), bytes / HBM bandwidth) + a fixed launch cost,
// bytes being the layer's weights, the KV its attention reads and the new KV it writes. The modeled backend
// sleeps for it (§10), and the discrete-event simulator charges it, so both model the same GPU: decode steps
// and small prefill batches are memory-bound, large prefills compute-bound, and a bigger batch shares one
// read of the weights. Plain functions over the model catalog and the GPU table; no clocks.
#include <cstdint>
#include <vector>

#include "core/hardware.hpp"
#include "core/model_catalog.hpp"

namespace dualpath {

inline constexpr double default_launch_s = 5e-6;  // per layer: kernel launches and the layer's synchronisation

// What the roofline needs of one GPU at a given MFU.
struct roofline {
  double peak_flops = 0;               // dense FLOP/s
  double mfu = 1;                      // fraction of the peak a compute-bound layer achieves
  double hbm_bytes_per_s = 0;          // HBM bandwidth
  double weight_bytes_per_param = 1;   // precision of the weights in HBM
  double launch_s = default_launch_s;  // fixed cost of every layer

  double flop_seconds(double flops) const { return flops / (peak_flops * mfu); }
  double byte_seconds(double bytes) const { return bytes / hbm_bytes_per_s; }
  // One layer: the slower of the two roofs, plus the launch cost.
  double layer_seconds(double flops, double bytes) const;
};

// The roofline of a GPU profile (core/hardware.hpp); user_error unless 0 < mfu <= 1 and launch_s >= 0.
roofline make_roofline(const gpu_profile& gpu, double mfu, double launch_s = default_launch_s);

// One request's share of a pass: `tokens` new tokens on top of `cached` tokens of context. A decode step
// is a pass of chunks {position, 1}.
struct prefill_chunk {
  uint64_t cached = 0;
  uint64_t tokens = 0;
};

// The work of one layer (all layers of the catalog's models are alike).
struct layer_work {
  double flops = 0;         // linear layers and attention (core/cost_model.hpp, per layer)
  double weight_bytes = 0;  // the layer's weights, read once for the whole batch
  double kv_bytes = 0;      // KV (and DSA indexer keys) attention reads, plus the new KV written
  double bytes() const { return weight_bytes + kv_bytes; }
};

// Weights one layer reads: active parameters × bytes per parameter / layers. For a MoE model the active
// parameters are one token's activated set (shared and routed top-k experts, attention): exact for one token,
// a lower bound for a batch whose tokens route to different experts. Under expert parallelism a GPU reads
// only the experts it holds, so we keep the activated set rather than grow it with the batch.
double layer_weight_bytes(const model_spec& m, double weight_bytes_per_param);

// KV bytes one layer of one chunk moves: it reads the cached context's KV once (GQA/MLA: every cached
// token; DSA: at most min(cached, tokens · top_k) tokens the indexer picks, plus every cached token's indexer
// key, one FP8 byte per indexer dimension) and writes the KV (and indexer keys) of its new tokens.
double layer_kv_bytes(const model_spec& m, const prefill_chunk& c);

layer_work prefill_layer_work(const model_spec& m, double weight_bytes_per_param,
                              const std::vector<prefill_chunk>& chunks);

// Seconds of one layer of a pass over `chunks`, and of the whole pass (layers × one layer).
double prefill_layer_seconds(const model_spec& m, const roofline& r, const std::vector<prefill_chunk>& chunks);
double prefill_pass_seconds(const model_spec& m, const roofline& r, const std::vector<prefill_chunk>& chunks);
double prefill_pass_seconds(const model_spec& m, const gpu_profile& gpu, double mfu,
                            const std::vector<prefill_chunk>& chunks);

// One decode step: every request feeds one token; `positions[i]` tokens are already in its KV.
double decode_step_seconds(const model_spec& m, const roofline& r, const std::vector<uint64_t>& positions);
double decode_step_seconds(const model_spec& m, const gpu_profile& gpu, double mfu,
                           const std::vector<uint64_t>& positions);

}  // namespace dualpath
