#pragma once
// A Hugging Face style model directory: config.json + model.safetensors (or shards + index).
#include <string>

#include "gpu/model_weights.hpp"
#include "gpu/safetensors.hpp"

namespace dualpath::gpu {

// Writes config.json and the weights (one file, or `shards` files with an index). Creates `dir`.
void write_model_dir(const std::string& dir, const model_weights& w, tensor_dtype dtype, uint32_t shards = 1);

// Reads config.json into a model_spec (LlamaForCausalLM or Qwen2ForCausalLM); throws user_error naming the
// file and field on anything missing or unsupported.
model_spec read_model_config(const std::string& dir);

// Loads and validates every tensor (presence and shape); throws user_error on the first problem.
model_weights load_model_dir(const std::string& dir);

// True when `dir` looks like a model directory (has config.json).
bool is_model_dir(const std::string& dir);

}  // namespace dualpath::gpu
