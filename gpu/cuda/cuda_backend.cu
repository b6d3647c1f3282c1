// Placeholder until the kernels land: reports availability only.
#include <cuda_runtime.h>

#include "core/errors.hpp"
#include "gpu/cuda_backend.hpp"

namespace dualpath::gpu {

bool cuda_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::string cuda_unavailable_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
  return n == 0 ? "no CUDA device visible" : "";
}

std::unique_ptr<compute_backend> make_cuda_backend(dense_model, int) {
  throw user_error("cuda backend: kernels not built yet");
}

}  // namespace dualpath::gpu
