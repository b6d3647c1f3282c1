#pragma once
// A Llama-style model's weights arranged for compute: fp32, with Q/K/V and gate/up fused so each is one GEMM.
// Plain data (no functions defined elsewhere), so the CUDA library can take it without linking back.
#include <cstdint>
#include <vector>

#include "core/model_catalog.hpp"

namespace dualpath::gpu {

struct dense_layer {
  std::vector<float> attn_norm;  // [hidden]
  std::vector<float> wqkv;       // [q + 2*kv, hidden]: q rows, then k rows, then v rows
  std::vector<float> bqkv;       // [q + 2*kv], zeros without QKV bias
  std::vector<float> wo;         // [hidden, q]
  std::vector<float> mlp_norm;   // [hidden]
  std::vector<float> wgu;        // [2*intermediate, hidden]: gate rows, then up rows
  std::vector<float> wdown;      // [hidden, intermediate]
};

struct dense_model {
  model_spec spec;
  std::vector<float> embed;  // [vocab, hidden]
  std::vector<dense_layer> layers;
  std::vector<float> final_norm;  // [hidden]
  std::vector<float> lm_head;     // [vocab, hidden]
};

}  // namespace dualpath::gpu
