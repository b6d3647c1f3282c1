#include "gpu/modeled_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/roofline.hpp"
#include "core/status.hpp"
#include "gpu/batched_pass.hpp"

namespace dualpath::gpu {

namespace {

void sleep_seconds(double s) {
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

// The modeled work of one pass: sleeps for the roofline time of each layer (docs/design.md §6) and emits
// modeled KV.
class modeled_batch {
 public:
  modeled_batch(const model_spec& m, const roofline& roof, std::vector<prefill_item> items)
      : m_(m), items_(std::move(items)) {
    std::vector<prefill_chunk> chunks;
    for (const auto& it : items_) chunks.push_back({it.cached, it.tokens.size()});
    layer_s_ = prefill_layer_seconds(m_, roof, chunks);
  }

  const std::vector<prefill_item>& items() const { return items_; }

  void layer(uint32_t layer, const std::vector<const std::vector<kv_span>*>& cached,
             const std::vector<std::byte*>& new_kv) {
    // Back-to-back layers chain their deadlines, so the oversleep of one layer is taken off the next; a layer
    // that starts late (the caller waited for KV) starts a fresh deadline.
    const auto start = std::chrono::steady_clock::now();
    const auto per_layer =
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(layer_s_));
    const bool back_to_back = start - deadline_ < std::chrono::milliseconds(1);  // late only by our oversleep
    deadline_ = (back_to_back ? deadline_ : start) + per_layer;
    const uint32_t bpt = uint32_t(m_.kv_bytes_per_token_layer);
    for (size_t r = 0; r < items_.size(); ++r) {
      const auto& it = items_[r];
      if (span_tokens(*cached[r]) != it.cached)
        throw std::invalid_argument(
            fmt::format("prefill pass: request {} layer {}: cached spans cover {} tokens, "
                        "expected {}",
                        it.request_id, layer, span_tokens(*cached[r]), it.cached));
      for (size_t i = 0; i < it.tokens.size(); ++i)
        modeled_kv_fill(layer, uint32_t(it.cached + i), it.tokens[i], new_kv[r] + i * bpt, bpt);
    }
    std::this_thread::sleep_until(deadline_);
  }

  std::vector<int32_t> finish() {
    std::vector<int32_t> out;
    for (const auto& it : items_) {
      const bool emit = it.emit_token && !it.tokens.empty();
      out.push_back(emit ? modeled_next_token(it.tokens.back(), uint32_t(it.cached + it.tokens.size() - 1), m_.vocab)
                         : -1);
    }
    return out;
  }

 private:
  model_spec m_;
  std::vector<prefill_item> items_;
  double layer_s_ = 0;
  std::chrono::steady_clock::time_point deadline_{};
};

class modeled_backend : public compute_backend {
 public:
  // fit() is the roofline's compute roof, FLOPs / (peak · MFU) with no fixed part: what every pass above the
  // memory roof takes, less its launches (docs/design.md §10). β's calibration and the batcher's quota
  // estimate with it, so they see a large prefill's time; the sleeps add the memory roof and the launches.
  modeled_backend(const model_spec& m, const gpu_profile& p, double mfu) : m_(m), roof_(make_roofline(p, mfu)) {
    fit_.seconds_per_flop = 1.0 / (p.peak_flops * mfu);
  }
  const model_spec& model() const override { return m_; }
  backend_kind kind() const override { return backend_kind::modeled; }
  flops_fit fit() const override { return fit_; }

  std::unique_ptr<prefill_pass> begin_prefill(std::vector<prefill_item> items) override {
    return std::make_unique<batched_pass<modeled_batch>>(m_.layers, m_, roof_, std::move(items));
  }

  std::vector<int32_t> decode_step(std::vector<decode_item>& items) override {
    const auto start = std::chrono::steady_clock::now();
    const uint32_t bpt = uint32_t(m_.kv_bytes_per_token_layer);
    std::vector<uint64_t> positions;
    std::vector<int32_t> out;
    for (auto& it : items) {
      if (it.kv.size() != m_.layers)
        throw std::invalid_argument(
            fmt::format("decode request {}: kv has {} layers, model has {}", it.request_id, it.kv.size(), m_.layers));
      for (uint32_t l = 0; l < m_.layers; ++l) {
        if (span_tokens(it.kv[l]) != it.position)
          throw std::invalid_argument(fmt::format("decode request {} layer {}: spans cover {} tokens, expected {}",
                                                  it.request_id, l, span_tokens(it.kv[l]), it.position));
        modeled_kv_fill(l, it.position, it.token, it.new_kv + uint64_t(l) * bpt, bpt);
      }
      positions.push_back(it.position);
      out.push_back(modeled_next_token(it.token, it.position, m_.vocab));
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!items.empty()) sleep_seconds(decode_step_seconds(m_, roof_, positions) - elapsed);
    return out;
  }

 private:
  model_spec m_;
  roofline roof_;
  flops_fit fit_;
};

}  // namespace

std::unique_ptr<compute_backend> make_modeled_backend(const model_spec& model, const gpu_profile& profile, double mfu) {
  if (!(mfu > 0 && mfu <= 1)) throw user_error(fmt::format("modeled backend: mfu {} must be in (0, 1]", mfu));
  if (model.layers == 0 || model.kv_bytes_per_token_layer == 0)
    throw user_error("modeled backend: model '" + model.name + "' has no layers or KV size");
  return std::make_unique<modeled_backend>(model, profile, mfu);
}

}  // namespace dualpath::gpu
