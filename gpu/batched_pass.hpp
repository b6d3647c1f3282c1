#pragma once
// The calling protocol of prefill_pass, enforced once for every backend: layers in order, one cached and
// one new-KV entry per item, finish() once and only after the last layer. `Batch` does the work:
//   const std::vector<prefill_item>& items() const;
//   void layer(uint32_t, const std::vector<const std::vector<kv_span>*>& cached, const std::vector<std::byte*>& new_kv);
//   std::vector<int32_t> finish();
#include <fmt/format.h>

#include <stdexcept>
#include <utility>

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

}  // namespace dualpath::gpu
