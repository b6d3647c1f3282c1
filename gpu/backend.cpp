#include "gpu/backend.hpp"

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/huge_pages.hpp"
#include "core/status.hpp"
#include "gpu/cpu_backend.hpp"
#include "gpu/cuda_backend.hpp"
#include "gpu/gpu_profile.hpp"
#include "gpu/linear_shapes.hpp"
#include "gpu/model_dir.hpp"
#include "gpu/model_loader.hpp"
#include "gpu/modeled_backend.hpp"

namespace dualpath::gpu {

namespace {
// A name that looks like a path gets a message about the directory, not the catalog.
void check_model_path(const std::string& model) {
  namespace fs = std::filesystem;
  if (is_model_dir(model) || (model.find('/') == std::string::npos && !fs::exists(model))) return;
  if (!fs::exists(model)) throw user_error("model directory '" + model + "' does not exist");
  throw user_error("model directory '" + model + "' has no config.json");
}
}  // namespace

uint64_t linear_weight_count(const model_spec& m) {
  uint64_t per_layer = 0;
  for (const auto& s : layer_linear_shapes(m)) per_layer += s.in * s.out;
  return m.layers * per_layer + uint64_t(m.vocab) * m.hidden;
}

std::shared_ptr<std::byte> compute_backend::resident_copy(const std::byte* host, uint64_t bytes) const {
  // Huge pages, as a node's arenas have them (host_buffer): a step streams every byte of the KV.
  std::shared_ptr<std::byte> copy(static_cast<std::byte*>(allocate_streamed(bytes)),
                                  [](std::byte* p) { std::free(p); });
  if (bytes) std::memcpy(copy.get(), host, bytes);
  return copy;
}

std::unique_ptr<compute_backend> make_backend(const backend_options& o) {
  check_model_path(o.model);
  if (o.kind == backend_kind::modeled) {
    const model_spec m = is_model_dir(o.model) ? read_model_config(o.model) : find_model(o.model);
    return make_modeled_backend(m, find_gpu_profile(o.gpu_profile), o.mfu);
  }
  if (o.kind == backend_kind::cpu) return make_cpu_backend(make_dense_model(resolve_weights(o.model, o.seed)));
  if (o.kind == backend_kind::cuda) {
    if (!cuda_available()) throw user_error("cuda backend: " + cuda_unavailable_reason());
    return make_cuda_backend(make_dense_model(resolve_weights(o.model, o.seed)), o.device);
  }
  throw user_error(std::string("compute backend ") + to_string(o.kind) + " cannot be built");
}

}  // namespace dualpath::gpu
