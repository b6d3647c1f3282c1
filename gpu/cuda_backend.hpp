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

// A GPU's roofs for `dualpath bench compute`, the cuda backend's counterparts of sgemm and a memory sweep on
// the cpu: cuBLAS bf16 GEMMs (fp32 accumulation, as the backend's) over the linear layers of one layer of `m`
// at `rows` rows, and a device-to-device copy far larger than the L2 (bytes read plus bytes written). Each
// call times one round of at least 20 ms on the GPU's own clock.
class cuda_yardsticks {
 public:
  cuda_yardsticks(const model_spec& m, uint32_t rows, int device);
  ~cuda_yardsticks();
  cuda_yardsticks(const cuda_yardsticks&) = delete;
  cuda_yardsticks& operator=(const cuda_yardsticks&) = delete;
  double gemm_gflop_per_s();
  double copy_gb_per_s();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace dualpath::gpu
