#pragma once
// Weights of a Llama-style decoder (Llama, or Qwen2 with QKV bias) in fp32 host memory, named and shaped as
// in Hugging Face checkpoints (linear weights are [out, in], row-major).
#include <cstdint>
#include <string>
#include <vector>

#include "core/model_catalog.hpp"

namespace dualpath::gpu {

struct tensor_def {
  std::string name;
  std::vector<uint64_t> shape;
};

struct model_weights {
  model_spec spec;
  // Every tensor in tensor_defs(spec) order.
  std::vector<std::vector<float>> tensors;

  const std::vector<float>& get(const std::string& name) const;
};

// The tensors a Llama-style model with `spec` must have, in a fixed order (embedding, per-layer, norm, head).
std::vector<tensor_def> tensor_defs(const model_spec& spec);

// Hugging Face names of one layer's tensors.
std::string layer_tensor(uint32_t layer, const char* suffix);

// Weights drawn from `seed`, rounded to bf16 so that writing them as bf16 and loading them back is exact.
// Each tensor has its own stream (seed, name), so the result does not depend on generation order.
model_weights generate_weights(const model_spec& spec, uint64_t seed);

// Throws user_error when `spec` cannot run on the cpu/cuda backends (not Llama-style / not runnable).
void check_runnable(const model_spec& spec);

}  // namespace dualpath::gpu
