// Without CUDA support in the build the cuda backend reports itself unavailable.
#include "gpu/cuda_backend.hpp"

#ifndef DUALPATH_HAVE_CUDA
#include "core/status.hpp"

namespace dualpath::gpu {

bool cuda_available() { return false; }
std::string cuda_unavailable_reason() { return "this build has no CUDA support (configure with -DDUALPATH_CUDA=ON)"; }
std::unique_ptr<compute_backend> make_cuda_backend(dense_model, int) { throw user_error(cuda_unavailable_reason()); }

struct cuda_yardsticks::impl {};
cuda_yardsticks::cuda_yardsticks(const model_spec&, uint32_t, int) { throw user_error(cuda_unavailable_reason()); }
cuda_yardsticks::~cuda_yardsticks() = default;
double cuda_yardsticks::gemm_gflop_per_s() { return 0; }
double cuda_yardsticks::copy_gb_per_s() { return 0; }

}  // namespace dualpath::gpu
#endif
