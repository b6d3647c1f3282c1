#pragma once
// GPU profiles for the modeled backend (docs/design.md §10): peak dense FLOP/s and HBM size of one GPU.
#include <cstdint>
#include <string>
#include <vector>

namespace dualpath::gpu {

struct gpu_profile {
  std::string name;
  double peak_flops = 0;   // dense FLOP/s the design's arithmetic uses (H800/H100: ~989e12, §10)
  uint64_t hbm_bytes = 0;  // memory of one GPU
};

const std::vector<gpu_profile>& gpu_profiles();

// Throws user_error listing the known names when absent.
const gpu_profile& find_gpu_profile(const std::string& name);

}  // namespace dualpath::gpu
