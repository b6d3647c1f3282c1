#include "gpu/backend.hpp"

#include "core/errors.hpp"
#include "gpu/gpu_profile.hpp"
#include "gpu/modeled_backend.hpp"

namespace dualpath::gpu {

std::unique_ptr<compute_backend> make_backend(const backend_options& o) {
  if (o.kind == "modeled") {
    const model_spec& m = find_model(o.model);
    return make_modeled_backend(m, find_gpu_profile(o.gpu_profile), o.mfu);
  }
  if (o.kind == "cpu" || o.kind == "cuda")
    throw user_error("backend '" + o.kind + "' is not available yet in this build");
  throw user_error("unknown compute backend '" + o.kind + "' (known: cpu, cuda, modeled)");
}

}  // namespace dualpath::gpu
