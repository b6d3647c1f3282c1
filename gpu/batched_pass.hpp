#pragma once
// The calling protocol of prefill_pass, enforced once for every backend: layers in order, one cached and
// one new-KV entry per item, finish() once and only after the last layer. `Batch` does the work:
//   const std::vector<prefill_item>& items() const;
//   void layer(uint32_t, const std::vector<const std::vector<kv_span>*>& cached, const std::vector<std::byte*>& new_kv);
//   std::vector<int32_t> finish();
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <utility>

#include "core/cost_model.hpp"
#include "gpu/backend.hpp"

namespace dualpath::gpu {

template <class Batch>
class batched_pass : public prefill_pass {
 public:
  template <class... Args>
  explicit batched_pass(uint32_t layers, Args&&... args) : layers_(layers), batch_(std::forward<Args>(args)...) {}

  void run_layer(uint32_t layer, const std::vector<std::vector<kv_span>>& cached,
                 const std::vector<std::byte*>& new_kv) override {
    if (layer != next_) throw std::logic_error(fmt::format("prefill pass: layer {} run, expected {}", layer, next_));
    const size_t n = batch_.items().size();
    if (cached.size() != n || new_kv.size() != n)
      throw std::invalid_argument("prefill pass: cached/new_kv must have one entry per item");
    std::vector<const std::vector<kv_span>*> c;
    c.reserve(n);
    for (const auto& v : cached) c.push_back(&v);
    batch_.layer(layer, c, new_kv);
    ++next_;
  }

  std::vector<int32_t> finish() override {
    if (next_ != layers_)
      throw std::logic_error(fmt::format("prefill pass: finish after {} of {} layers", next_, layers_));
    ++next_;  // callable once
    return batch_.finish();
  }

 private:
  uint32_t layers_;
  uint32_t next_ = 0;
  Batch batch_;
};

// One decode step as a batch of one-token prefills over each item's paged KV: `Batch(args..., items)`.
template <class Batch, class... Args>
std::vector<int32_t> decode_as_prefill(const model_spec& m, std::vector<decode_item>& items, Args&... args) {
  std::vector<prefill_item> pitems;
  for (auto& it : items) {
    if (it.kv.size() != m.layers)
      throw std::invalid_argument(
          fmt::format("decode request {}: kv has {} layers, model has {}", it.request_id, it.kv.size(), m.layers));
    pitems.push_back(prefill_item{it.request_id, it.position, {it.token}, true, it.logits, it.sample});
  }
  Batch batch(args..., std::move(pitems));
  std::vector<const std::vector<kv_span>*> cached(items.size());
  std::vector<std::byte*> out(items.size());
  for (uint32_t l = 0; l < m.layers; ++l) {
    for (size_t r = 0; r < items.size(); ++r) {
      cached[r] = &items[r].kv[l];
      out[r] = items[r].new_kv + uint64_t(l) * m.kv_bytes_per_token_layer;
    }
    batch.layer(l, cached, out);
  }
  return batch.finish();
}

// The backend's FLOPs -> time fit: times a cold prefill pass of `small` and of `big` tokens (after one
// warm-up pass of `warm_up` tokens), the fastest of `tries` each, and fits seconds = fixed + flops·slope
// through them; the slope is at least `min_slope` (timer noise must not make it zero or negative).
template <class Batch, class... Args>
flops_fit fit_prefill_time(const model_spec& m, uint32_t small, uint32_t big, uint32_t warm_up, uint32_t tries,
                           double min_slope, Args&... args) {
  auto run = [&](uint32_t tokens) {
    prefill_item it{0, 0, {}, true};
    for (uint32_t i = 0; i < tokens; ++i) it.tokens.push_back(int32_t((i * 7919u) % m.vocab));
    std::vector<std::byte> kv(uint64_t(tokens) * m.kv_bytes_per_token_layer);
    const auto t0 = std::chrono::steady_clock::now();
    batched_pass<Batch> pass(m.layers, args..., std::vector<prefill_item>{it});
    for (uint32_t l = 0; l < m.layers; ++l) pass.run_layer(l, {{}}, {kv.data()});
    pass.finish();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  run(warm_up);
  double ts = run(small), tb = run(big);
  for (uint32_t t = 1; t < tries; ++t) ts = std::min(ts, run(small)), tb = std::min(tb, run(big));
  const double fs = prefill_flops(m, 0, small), fb = prefill_flops(m, 0, big);
  flops_fit f;
  f.seconds_per_flop = std::max(min_slope, (tb - ts) / (fb - fs));
  f.fixed_s = std::max(0.0, ts - fs * f.seconds_per_flop);
  return f;
}

}  // namespace dualpath::gpu
