#include "gpu/model_weights.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/status.hpp"
#include "gpu/bf16.hpp"

namespace dualpath::gpu {

namespace {

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

uint64_t name_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Uniform in [-1, 1) from a counter-based stream: value i of tensor `name` under `seed`.
float uniform(uint64_t stream, uint64_t i) { return float(double(mix(stream + mix(i)) >> 11) * 0x1p-52 - 1.0); }

}  // namespace

std::string layer_tensor(uint32_t layer, const char* suffix) {
  return fmt::format("model.layers.{}.{}", layer, suffix);
}

std::vector<tensor_def> tensor_defs(const model_spec& m) {
  const uint64_t h = m.hidden, q = uint64_t(m.heads) * m.head_dim, kv = uint64_t(m.kv_heads) * m.head_dim,
                 inter = m.intermediate;
  std::vector<tensor_def> d;
  d.push_back({"model.embed_tokens.weight", {m.vocab, h}});
  for (uint32_t l = 0; l < m.layers; ++l) {
    d.push_back({layer_tensor(l, "input_layernorm.weight"), {h}});
    d.push_back({layer_tensor(l, "self_attn.q_proj.weight"), {q, h}});
    d.push_back({layer_tensor(l, "self_attn.k_proj.weight"), {kv, h}});
    d.push_back({layer_tensor(l, "self_attn.v_proj.weight"), {kv, h}});
    if (m.qkv_bias) {
      d.push_back({layer_tensor(l, "self_attn.q_proj.bias"), {q}});
      d.push_back({layer_tensor(l, "self_attn.k_proj.bias"), {kv}});
      d.push_back({layer_tensor(l, "self_attn.v_proj.bias"), {kv}});
    }
    d.push_back({layer_tensor(l, "self_attn.o_proj.weight"), {h, q}});
    d.push_back({layer_tensor(l, "post_attention_layernorm.weight"), {h}});
    d.push_back({layer_tensor(l, "mlp.gate_proj.weight"), {inter, h}});
    d.push_back({layer_tensor(l, "mlp.up_proj.weight"), {inter, h}});
    d.push_back({layer_tensor(l, "mlp.down_proj.weight"), {h, inter}});
  }
  d.push_back({"model.norm.weight", {h}});
  d.push_back({"lm_head.weight", {m.vocab, h}});
  return d;
}

const std::vector<float>& model_weights::get(const std::string& name) const {
  const auto defs = tensor_defs(spec);
  for (size_t i = 0; i < defs.size(); ++i)
    if (defs[i].name == name) return tensors.at(i);
  throw std::out_of_range("model_weights: no tensor " + name);
}

void check_runnable(const model_spec& m) {
  if (m.attention != attention_kind::gqa || m.intermediate == 0 || m.heads == 0 || m.kv_heads == 0 ||
      m.heads % m.kv_heads != 0 || m.head_dim % 2 != 0 || m.head_dim > 512 ||
      uint64_t(m.kv_heads) * m.head_dim > 8192 || m.vocab == 0 || m.layers == 0)
    throw user_error("model '" + m.name +
                     "' is not a Llama-style dense GQA model the cpu/cuda backends can run "
                     "(use the modeled backend for it)");
  if (m.kv_bytes_per_token_layer != 2ull * m.kv_heads * m.head_dim * 2)
    throw user_error("model '" + m.name + "': kv_bytes_per_token_layer is not bf16 K+V of every KV head");
}

model_weights generate_weights(const model_spec& spec, uint64_t seed) {
  check_runnable(spec);
  if (!spec.runnable) {
    std::string names;
    for (const auto& m : model_catalog())
      if (m.runnable) names += (names.empty() ? "" : ", ") + m.name;
    throw user_error("model '" + spec.name + "' is too large for seeded cpu/cuda weights (runnable: " + names +
                     "; use the modeled backend)");
  }
  model_weights w;
  w.spec = spec;
  for (const auto& d : tensor_defs(spec)) {
    uint64_t n = 1;
    for (auto s : d.shape) n *= s;
    std::vector<float> t(n);
    const uint64_t stream = mix(seed ^ name_hash(d.name));
    const bool is_norm = d.name.find("norm") != std::string::npos;
    const bool is_bias = d.name.find("bias") != std::string::npos;
    const bool is_embed = d.name.find("embed") != std::string::npos;
    // Linear weights keep activations at unit scale (variance 1/in); norms near 1; small biases.
    const float scale = is_norm || is_bias ? 0.1f : is_embed ? 1.0f : float(std::sqrt(3.0 / double(d.shape.back())));
    for (uint64_t i = 0; i < n; ++i) {
      const float u = uniform(stream, i) * scale;
      t[i] = round_bf16(is_norm ? 1.0f + u : u);
    }
    w.tensors.push_back(std::move(t));
  }
  return w;
}

}  // namespace dualpath::gpu
