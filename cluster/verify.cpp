#include "cluster/verify.hpp"

namespace dualpath::cluster {

std::vector<int32_t> recompute_turn(gpu::compute_backend& backend, const std::vector<int32_t>& prompt, uint32_t gen,
                                    const gpu::sampling& sample) {
  const auto& m = backend.model();
  const uint64_t bytes = m.kv_bytes_per_token_layer;
  std::vector<std::vector<std::byte>> kv(m.layers, std::vector<std::byte>(prompt.size() * bytes));
  gpu::prefill_item item;
  item.cached = 0;
  item.tokens = prompt;
  item.emit_token = true;
  item.sample = sample;
  auto pass = backend.begin_prefill({item});
  for (uint32_t l = 0; l < m.layers; ++l) pass->run_layer(l, {{}}, {kv[l].data()});
  std::vector<int32_t> out{pass->finish().at(0)};
  std::vector<std::byte> fresh(m.layers * bytes);
  while (out.size() < gen) {
    std::vector<gpu::decode_item> items(1);
    auto& d = items[0];
    d.token = out.back();
    d.position = uint32_t(kv[0].size() / bytes);
    for (uint32_t l = 0; l < m.layers; ++l) d.kv.push_back({{kv[l].data(), d.position}});
    d.new_kv = fresh.data();
    d.sample = sample;
    out.push_back(backend.decode_step(items).at(0));
    for (uint32_t l = 0; l < m.layers; ++l)
      kv[l].insert(kv[l].end(), fresh.begin() + l * bytes, fresh.begin() + (l + 1) * bytes);
  }
  return out;
}

verify_counts verify_turns(const turns_to_verify& turns, const std::shared_ptr<gpu::compute_backend>& run_backend,
                           const gpu::backend_options& options) {
  verify_counts out;
  if (turns.empty() || options.kind == backend_kind::modeled) return out;
  // Every engine has stopped by now, so the run's own backend is free to serve as the reference.
  std::shared_ptr<gpu::compute_backend> reference = run_backend;
  if (options.kind != backend_kind::cpu) {
    gpu::backend_options ref = options;
    ref.kind = backend_kind::cpu;
    reference = gpu::make_backend(ref);
  }
  for (const auto& [prompt, generated] : turns) {
    ++out.verified;
    if (recompute_turn(*reference, prompt, uint32_t(generated.size())) != generated) ++out.mismatched;
  }
  return out;
}

}  // namespace dualpath::cluster
