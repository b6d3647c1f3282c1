#include "core/names.hpp"
#include "gpu/gpu_profile.hpp"

#include "core/status.hpp"

namespace dualpath::gpu {

const std::vector<gpu_profile>& gpu_profiles() {
  static const std::vector<gpu_profile> profiles = {
      {"h800", 989e12, 80ull << 30},
      {"h100", 989e12, 80ull << 30},
      {"h200", 989e12, 141ull << 30},
      {"h20", 148e12, 96ull << 30},
      {"a100", 312e12, 80ull << 30},
  };
  return profiles;
}

const gpu_profile& find_gpu_profile(const std::string& name) {
  return find_named(gpu_profiles(), name, "GPU profile");
}

}  // namespace dualpath::gpu
