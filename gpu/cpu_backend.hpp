#pragma once
// The cpu backend: real fp32 math with bf16 KV storage; linear layers and attention products through
// OpenBLAS sgemm. The correctness reference for the other backends.
#include <memory>

#include "gpu/backend.hpp"
#include "gpu/dense_model.hpp"

namespace dualpath::gpu {

std::unique_ptr<compute_backend> make_cpu_backend(dense_model model);

}  // namespace dualpath::gpu
