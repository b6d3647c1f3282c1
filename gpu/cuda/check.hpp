#pragma once
// CUDA and cuBLAS status codes turned into exceptions that name the failed call.
#ifndef DUALPATH_SIMT_EMULATION  // tests build the backend over a SIMT emulator that supplies both (tests/gpu/)
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif
#include <fmt/format.h>

#include <stdexcept>

namespace dualpath::gpu::cuda_status {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("cuda: {} failed: {}", what, cudaGetErrorString(e)));
}
inline void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(fmt::format("cublas: {} failed (status {})", what, int(e)));
}

}  // namespace dualpath::gpu::cuda_status
