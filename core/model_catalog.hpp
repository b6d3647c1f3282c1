#pragma once
// The model catalog: every number the rest of the system needs about a model (docs/design.md §6).
#include <cstdint>
#include <string>
#include <vector>

namespace dualpath {

// How attention FLOPs scale with context.
enum class attention_kind {
  gqa,  // dense grouped-query attention: cost grows with the whole context
  mla,  // multi-head latent attention, dense over the context
  dsa,  // MLA with DeepSeek sparse attention: a lightning indexer over the context picks top-k
};

const char* to_string(attention_kind kind);

struct model_spec {
  std::string name;
  std::string description;
  attention_kind attention = attention_kind::gqa;
  uint32_t layers = 0;
  uint32_t hidden = 0;
  uint32_t heads = 0;         // query heads
  uint32_t kv_heads = 0;      // GQA: key/value heads (MLA: 1 latent "head")
  uint32_t head_dim = 0;      // GQA: per-head dim; MLA: qk head dim incl. rope (576 for DeepSeek)
  uint32_t v_head_dim = 0;    // MLA: value dim attended per head (512 for DeepSeek's absorbed form)
  uint32_t intermediate = 0;  // dense MLP width (Llama-style models)
  uint32_t vocab = 0;
  uint32_t dsa_top_k = 0;      // DSA: tokens each query attends to
  uint32_t indexer_heads = 0;  // DSA lightning indexer
  uint32_t indexer_dim = 0;
  double active_params = 0;  // parameters touched per token by linear layers (MoE: activated)
  double total_params = 0;
  uint64_t kv_bytes_per_token_layer = 0;  // bytes one token's KV occupies in one layer
  uint32_t block_tokens = 64;             // tokens per KV block
  // Llama-style architecture details, used by the cpu/cuda backends.
  double rope_theta = 10000.0;
  double rms_eps = 1e-5;
  bool qkv_bias = false;  // Qwen2 variant
  bool runnable = false;  // small enough for the cpu backend

  uint64_t kv_bytes_per_token() const { return kv_bytes_per_token_layer * layers; }
  uint64_t layer_block_bytes() const { return kv_bytes_per_token_layer * block_tokens; }
  uint64_t full_block_bytes() const { return layer_block_bytes() * layers; }
};

// All catalog entries, in display order.
const std::vector<model_spec>& model_catalog();

// Looks a model up by name; throws user_error listing the known names when absent.
const model_spec& find_model(const std::string& name);

}  // namespace dualpath
