#pragma once
// Hardware profiles: what a GPU computes and what a node's links carry. The one GPU table: the modeled backend
// and the roofline (core/roofline.hpp, docs/design.md §6, §10) turn FLOPs and bytes into time with it, the
// scheduler calibrates α/β (§7.2), `dualpath bounds` checks §5.
#include <cstdint>
#include <string>
#include <vector>

namespace dualpath {

struct gpu_profile {
  std::string name;
  std::string description;
  double peak_flops = 0;              // dense tensor FLOP/s the design's arithmetic uses (BF16 rate, §6)
  std::string precision;              // of the weights: "fp8" or "bf16"
  double weight_bytes_per_param = 1;  // bytes one weight occupies in HBM at that precision
  uint64_t hbm_bytes = 0;             // HBM capacity of one GPU
  double hbm_bytes_per_s = 0;         // HBM bandwidth

  double dense_tflops() const { return peak_flops / 1e12; }

  // Seconds to execute `flops` at model FLOPs utilisation `mfu` (0 < mfu <= 1).
  double seconds_for(double flops, double mfu) const;
};

struct node_profile {
  std::string name;
  std::string description;
  std::string gpu;             // gpu_profile name
  uint32_t gpus = 8;           // g
  double cnic_gb_per_s = 50;   // B: compute NIC per GPU, each direction
  double snic_ratio = 1;       // s: storage NIC per node = s·B
  double dram_gb_per_s = 500;  // M: node DRAM bandwidth

  double snic_gb_per_s() const { return snic_ratio * cnic_gb_per_s; }
};

const std::vector<gpu_profile>& gpu_profiles();
const gpu_profile& find_gpu(const std::string& name);  // user_error listing the known names

const std::vector<node_profile>& node_profiles();
const node_profile& find_node(const std::string& name);  // user_error listing the known names

// Scheduler thresholds of docs/design.md §7.2, in tokens of `kv_bytes_per_token`-byte KV / of prefill work:
// α = tokens a node's SNIC reads in `seconds`; β = tokens one GPU prefills in `seconds` when each
// token costs `flops_per_token` at utilisation `mfu`.
double alpha_tokens(const node_profile& node, uint64_t kv_bytes_per_token, double seconds);
double beta_tokens(const gpu_profile& gpu, double flops_per_token, double mfu, double seconds);

}  // namespace dualpath
