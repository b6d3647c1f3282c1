#pragma once
// The cuda backend (gpu/cuda/): same interface and numerics as the cpu backend on a GPU. Present when the build
// found a CUDA toolkit; usable when a device is present at run time.
#include <memory>
#include <string>

#include "gpu/backend.hpp"
#include "gpu/dense_model.hpp"

namespace dualpath::gpu {

bool cuda_available();                  // built with CUDA and at least one device visible
std::string cuda_unavailable_reason();  // why not, for messages and test skips
std::unique_ptr<compute_backend> make_cuda_backend(dense_model model, int device);

}  // namespace dualpath::gpu
