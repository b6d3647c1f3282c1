#pragma once
// The modeled backend: no math. Each layer of a prefill pass and each decode step sleeps for the time the
// roofline (core/roofline.hpp, docs/design.md §6) predicts on a GPU profile at a given MFU, and emits
// deterministic KV bytes and tokens.
#include <memory>

#include "gpu/backend.hpp"
#include "gpu/gpu_profile.hpp"

namespace dualpath::gpu {

std::unique_ptr<compute_backend> make_modeled_backend(const model_spec& model, const gpu_profile& profile, double mfu);

}  // namespace dualpath::gpu
