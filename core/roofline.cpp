#include "core/roofline.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/cost_model.hpp"
#include "core/status.hpp"

namespace dualpath {

double roofline::layer_seconds(double flops, double bytes) const {
  return std::max(flop_seconds(flops), byte_seconds(bytes)) + launch_s;
}

roofline make_roofline(const gpu_profile& gpu, double mfu, double launch_s) {
  if (!(mfu > 0 && mfu <= 1)) throw user_error(fmt::format("roofline: MFU must be in (0, 1], got {}", mfu));
  if (!(launch_s >= 0)) throw user_error(fmt::format("roofline: launch cost must not be negative, got {}", launch_s));
  if (!(gpu.peak_flops > 0 && gpu.hbm_bytes_per_s > 0))
    throw user_error("roofline: GPU profile '" + gpu.name + "' has no FLOP rate or HBM bandwidth");
  return roofline{gpu.peak_flops, mfu, gpu.hbm_bytes_per_s, gpu.weight_bytes_per_param, launch_s};
}

double layer_weight_bytes(const model_spec& m, double weight_bytes_per_param) {
  return m.layers ? m.active_params * weight_bytes_per_param / m.layers : 0;
}

double layer_kv_bytes(const model_spec& m, const prefill_chunk& c) {
  const double per_token = double(m.kv_bytes_per_token_layer);
  const double cached = double(c.cached), fresh = double(c.tokens);
  if (m.attention != attention_kind::dsa) return (cached + fresh) * per_token;
  // DSA: the sparse part reads only what the indexer picks, the indexer reads every cached key (FP8).
  const double picked = std::min(cached, fresh * double(m.dsa_top_k));
  const double index_key = double(m.indexer_dim);
  return picked * per_token + cached * index_key + fresh * (per_token + index_key);
}

layer_work prefill_layer_work(const model_spec& m, double weight_bytes_per_param,
                              const std::vector<prefill_chunk>& chunks) {
  layer_work w;
  if (m.layers == 0) return w;
  for (const auto& c : chunks) {
    if (c.tokens == 0) continue;
    w.flops += prefill_flops(m, c.cached, c.tokens) / m.layers;
    w.kv_bytes += layer_kv_bytes(m, c);
  }
  // An empty pass launches nothing and reads no weights.
  if (w.flops > 0) w.weight_bytes = layer_weight_bytes(m, weight_bytes_per_param);
  return w;
}

double prefill_layer_seconds(const model_spec& m, const roofline& r, const std::vector<prefill_chunk>& chunks) {
  const layer_work w = prefill_layer_work(m, r.weight_bytes_per_param, chunks);
  if (w.flops <= 0) return 0;
  return r.layer_seconds(w.flops, w.bytes());
}

double prefill_pass_seconds(const model_spec& m, const roofline& r, const std::vector<prefill_chunk>& chunks) {
  return m.layers * prefill_layer_seconds(m, r, chunks);
}

double prefill_pass_seconds(const model_spec& m, const gpu_profile& gpu, double mfu,
                            const std::vector<prefill_chunk>& chunks) {
  return prefill_pass_seconds(m, make_roofline(gpu, mfu), chunks);
}

double decode_step_seconds(const model_spec& m, const roofline& r, const std::vector<uint64_t>& positions) {
  // The fed token attends to the `position` tokens before it and to itself: the FLOPs of f(position + 1).
  std::vector<prefill_chunk> chunks;
  chunks.reserve(positions.size());
  for (uint64_t p : positions) chunks.push_back({p, 1});
  return prefill_pass_seconds(m, r, chunks);
}

double decode_step_seconds(const model_spec& m, const gpu_profile& gpu, double mfu,
                           const std::vector<uint64_t>& positions) {
  return decode_step_seconds(m, make_roofline(gpu, mfu), positions);
}

}  // namespace dualpath
