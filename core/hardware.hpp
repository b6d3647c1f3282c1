#pragma once
// Hardware profiles: what a GPU computes and what a node's links carry. The modeled backend turns
// FLOPs into time with them, the scheduler calibrates α/β (docs/design.md §7.2), `dualpath bounds` checks §5.
#include <cstdint>
#include <string>
#include <vector>

namespace dualpath {

struct gpu_profile {
  std::string name;
  std::string description;
  double dense_tflops = 0;  // peak dense tensor FLOP/s in TFLOP/s at the precision below
  std::string precision;    // "fp8" or "bf16"
  double hbm_gb = 0;        // HBM capacity
  double hbm_gb_per_s = 0;  // HBM bandwidth

  // Seconds to execute `flops` at model FLOPs utilisation `mfu` (0 < mfu <= 1).
  double seconds_for(double flops, double mfu) const;
};

struct node_profile {
  std::string name;
  std::string description;
  std::string gpu;              // gpu_profile name
  uint32_t gpus = 8;            // g
  double cnic_gb_per_s = 50;    // B: compute NIC per GPU, each direction
  double snic_ratio = 1;        // s: storage NIC per node = s·B
  double dram_gb_per_s = 500;   // M: node DRAM bandwidth

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
