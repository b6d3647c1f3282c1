#include "core/names.hpp"
#include "core/model_catalog.hpp"

#include "core/status.hpp"

namespace dualpath {

const char* to_string(attention_kind kind) {
  return name_of(kind, {{attention_kind::gqa, "gqa"}, {attention_kind::mla, "mla"}, {attention_kind::dsa, "dsa"}});
}

namespace {

// DeepSeek MLA cache per token and layer: FP8 latent (512 B) + 4 FP32 scales (16 B) + BF16 rope key (128 B).
constexpr uint64_t deepseek_mla_bytes = 512 + 16 + 128;

// Small Llama-style model whose KV is K and V for every KV head in bf16.
model_spec llama_style(std::string name, std::string description, uint32_t layers, uint32_t hidden, uint32_t heads,
                       uint32_t kv_heads, uint32_t intermediate, uint32_t vocab, uint32_t block_tokens) {
  model_spec m;
  m.name = std::move(name);
  m.description = std::move(description);
  m.attention = attention_kind::gqa;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.head_dim = hidden / heads;
  m.v_head_dim = m.head_dim;
  m.intermediate = intermediate;
  m.vocab = vocab;
  const double attn = double(hidden) * m.head_dim * (heads + 2.0 * kv_heads) + double(heads) * m.head_dim * hidden;
  const double mlp = 3.0 * hidden * intermediate;
  m.active_params = layers * (attn + mlp) + double(vocab) * hidden;  // LM head counts; embedding is a lookup
  m.total_params = m.active_params + double(vocab) * hidden;
  m.kv_bytes_per_token_layer = 2ull * kv_heads * m.head_dim * 2;  // K and V, bf16
  m.block_tokens = block_tokens;
  m.rope_theta = 10000.0;
  m.rms_eps = 1e-5;
  m.runnable = true;
  return m;
}

std::vector<model_spec> build_catalog() {
  std::vector<model_spec> c;

  model_spec v32;
  v32.name = "deepseek-v3.2";
  v32.description = "DeepSeek-V3.2 (DS 660B): MoE, MLA with DSA sparse attention";
  v32.attention = attention_kind::dsa;
  v32.layers = 61;
  v32.hidden = 7168;
  v32.heads = 128;
  v32.kv_heads = 1;
  v32.head_dim = 576;
  v32.v_head_dim = 512;
  v32.vocab = 129280;
  v32.dsa_top_k = 2048;
  v32.indexer_heads = 64;
  v32.indexer_dim = 128;
  v32.active_params = 37e9;
  v32.total_params = 671e9;
  v32.kv_bytes_per_token_layer = deepseek_mla_bytes;
  c.push_back(v32);

  model_spec v3 = v32;
  v3.name = "deepseek-v3";
  v3.description = "DeepSeek-V3: MoE, dense MLA, BF16 latent cache";
  v3.attention = attention_kind::mla;
  // V3's reference inference caches the 512-d latent and the 64-d rope key in BF16; the FP8 latent
  // format (656 B) arrived with V3.2.
  v3.kv_bytes_per_token_layer = (512 + 64) * 2;
  v3.dsa_top_k = 0;
  v3.indexer_heads = 0;
  v3.indexer_dim = 0;
  c.push_back(v3);

  // The paper's internal DS 27B (appendix A.2): 30 layers, hidden 2560, 72 routed experts,
  // indexer top-k 1024, MLA cache as V3.2. The paper does not print head counts or activated
  // parameters, so they are scaled from V3.2: heads by hidden size (128·2560/7168 = 45.7 -> 48,
  // indexer 64 -> 24), activated parameters by layers × hidden² (37e9·30/61·(2560/7168)² = 2.3e9).
  model_spec d27 = v32;
  d27.name = "ds-27b";
  d27.description = "DS 27B (paper's internal model): MoE, MLA with DSA, 30 layers";
  d27.layers = 30;
  d27.hidden = 2560;
  d27.heads = 48;
  d27.dsa_top_k = 1024;
  d27.indexer_heads = 24;
  d27.active_params = 37e9 * 30.0 / 61.0 * (2560.0 / 7168.0) * (2560.0 / 7168.0);
  d27.total_params = 27e9;
  c.push_back(d27);

  // Llama-shaped but for its biases, its RoPE base and ε; Qwen's own card gives its parameter count.
  model_spec qwen =
      llama_style("qwen2.5-32b", "Qwen2.5-32B: dense, GQA 40 query / 8 KV heads", 64, 5120, 40, 8, 27648, 152064, 64);
  qwen.active_params = qwen.total_params = 32.5e9;
  qwen.rope_theta = 1000000.0;
  qwen.rms_eps = 1e-6;
  qwen.qkv_bias = true;
  qwen.runnable = false;
  c.push_back(qwen);

  // Runnable on the cpu backend. `tiny` keeps tests fast; `small` is for demos and benchmarks.
  c.push_back(llama_style("tiny", "Llama-style test model (cpu backend)", 4, 128, 4, 2, 256, 512, 16));
  c.push_back(llama_style("small", "Llama-style demo model (cpu backend)", 8, 512, 8, 4, 1536, 4096, 64));
  return c;
}

}  // namespace

const std::vector<model_spec>& model_catalog() {
  static const std::vector<model_spec> catalog = build_catalog();
  return catalog;
}

const model_spec& find_model(const std::string& name) { return find_named(model_catalog(), name, "model"); }

}  // namespace dualpath
