#include "gpu/gpu_profile.hpp"

#include "core/errors.hpp"

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
  std::string known;
  for (const auto& p : gpu_profiles()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw user_error("unknown GPU profile '" + name + "' (known: " + known + ")");
}

}  // namespace dualpath::gpu
