#include "gpu/model_loader.hpp"

#include "gpu/model_dir.hpp"

namespace dualpath::gpu {

model_weights resolve_weights(const std::string& model_or_dir, uint64_t seed) {
  if (is_model_dir(model_or_dir)) return load_model_dir(model_or_dir);
  return generate_weights(find_model(model_or_dir), seed);  // find_model names the known models when absent
}

dense_model make_dense_model(const model_weights& w) {
  const model_spec& m = w.spec;
  dense_model d;
  d.spec = m;
  const uint64_t q = uint64_t(m.heads) * m.head_dim, kv = uint64_t(m.kv_heads) * m.head_dim;
  auto cat = [](std::initializer_list<const std::vector<float>*> parts) {
    std::vector<float> out;
    for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
    return out;
  };
  d.embed = w.get("model.embed_tokens.weight");
  for (uint32_t l = 0; l < m.layers; ++l) {
    dense_layer L;
    L.attn_norm = w.get(layer_tensor(l, "input_layernorm.weight"));
    L.wqkv =
        cat({&w.get(layer_tensor(l, "self_attn.q_proj.weight")), &w.get(layer_tensor(l, "self_attn.k_proj.weight")),
             &w.get(layer_tensor(l, "self_attn.v_proj.weight"))});
    if (m.qkv_bias) {
      L.bqkv = cat({&w.get(layer_tensor(l, "self_attn.q_proj.bias")), &w.get(layer_tensor(l, "self_attn.k_proj.bias")),
                    &w.get(layer_tensor(l, "self_attn.v_proj.bias"))});
    } else {
      L.bqkv.assign(q + 2 * kv, 0.0f);
    }
    L.wo = w.get(layer_tensor(l, "self_attn.o_proj.weight"));
    L.mlp_norm = w.get(layer_tensor(l, "post_attention_layernorm.weight"));
    L.wgu = cat({&w.get(layer_tensor(l, "mlp.gate_proj.weight")), &w.get(layer_tensor(l, "mlp.up_proj.weight"))});
    L.wdown = w.get(layer_tensor(l, "mlp.down_proj.weight"));
    d.layers.push_back(std::move(L));
  }
  d.final_norm = w.get("model.norm.weight");
  d.lm_head = w.get("lm_head.weight");
  return d;
}

}  // namespace dualpath::gpu
