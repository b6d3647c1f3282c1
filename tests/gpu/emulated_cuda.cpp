// The cuda backend's own sources, kernels and host code, built as host code over the SIMT emulator. The
// renames keep them apart from the real cuda backend (or its stub) that the same test binary links.
#define DUALPATH_SIMT_EMULATION 1
#include "cuda_shim.hpp"
// Headers the sources include, pulled in before the renames so nothing else is renamed.
#include "core/cost_model.hpp"
#include "core/status.hpp"
#include "gpu/batched_pass.hpp"
#include "gpu/bf16.hpp"

#define cuda simt_cuda
#define make_cuda_backend make_emulated_cuda_backend
#define cuda_available emulated_cuda_available
#define cuda_unavailable_reason emulated_cuda_unavailable_reason
#include "gpu/cuda/cuda_backend.cpp"
#include "gpu/cuda/kernels.cu"
#include "gpu/cuda/attention.cu"
#include "gpu/cuda/decode_attention.cu"

#undef cuda
#include <stdexcept>

#include "emulated_cuda.hpp"

namespace dualpath::gpu {

device_memory emulated_device_memory() {
  return {
      [](const void* host, size_t bytes) -> void* {
        void* d = nullptr;
        if (cudaMalloc(&d, bytes) != cudaSuccess || cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
          throw std::runtime_error(cudaGetErrorString(cudaGetLastError()));
        return d;
      },
      [](void* d) { cudaFree(d); }};
}

}  // namespace dualpath::gpu
