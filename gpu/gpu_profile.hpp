#pragma once
// GPU profiles for the modeled backend (docs/design.md §10): the one table of core/hardware.hpp (peak dense
// FLOP/s, HBM size and bandwidth, weight precision), under the names the gpu/ code and its users know.
#include <string>
#include <vector>

#include "core/hardware.hpp"

namespace dualpath::gpu {

using dualpath::gpu_profile;
using dualpath::gpu_profiles;

// Throws user_error listing the known names when absent.
inline const gpu_profile& find_gpu_profile(const std::string& name) { return find_gpu(name); }

}  // namespace dualpath::gpu
