#pragma once
// Resolves `--model` for the cpu/cuda backends: a model directory is loaded, a catalog name is generated from
// the seed (the same weights `dualpath model init --seed` writes), then arranged for compute.
#include <cstdint>
#include <string>

#include "gpu/dense_model.hpp"
#include "gpu/model_weights.hpp"

namespace dualpath::gpu {

model_weights resolve_weights(const std::string& model_or_dir, uint64_t seed);
dense_model make_dense_model(const model_weights& w);

}  // namespace dualpath::gpu
