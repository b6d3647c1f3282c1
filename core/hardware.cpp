#include "core/names.hpp"
#include "core/hardware.hpp"

#include <fmt/format.h>

#include "core/status.hpp"

namespace dualpath {

double gpu_profile::seconds_for(double flops, double mfu) const {
  if (!(mfu > 0 && mfu <= 1)) throw user_error(fmt::format("MFU must be in (0, 1], got {}", mfu));
  return flops / (peak_flops * mfu);
}

const std::vector<gpu_profile>& gpu_profiles() {
  // Peak dense (no sparsity) BF16 tensor throughput, HBM size and bandwidth from the vendors' data sheets.
  // The FLOP rate is the BF16 one on every GPU (docs/design.md §6: 989 TFLOP/s on H800), so MFU means the
  // same everywhere; the weights are FP8 (1 byte) where the GPU has FP8 tensor cores, BF16 (2 bytes) on A100.
  constexpr uint64_t gib = 1ull << 30;
  static const std::vector<gpu_profile> gpus = {
      {"h800", "NVIDIA H800 SXM (the paper's cluster)", 989e12, "fp8", 1, 80 * gib, 3350e9},
      {"h100", "NVIDIA H100 SXM", 989e12, "fp8", 1, 80 * gib, 3350e9},
      {"h200", "NVIDIA H200 SXM", 989e12, "fp8", 1, 141 * gib, 4800e9},
      {"h20", "NVIDIA H20", 148e12, "fp8", 1, 96 * gib, 4000e9},
      {"a100", "NVIDIA A100 SXM 80GB (no FP8)", 312e12, "bf16", 2, 80 * gib, 2039e9},
  };
  return gpus;
}

const std::vector<node_profile>& node_profiles() {
  // g = 8 GPUs, one 400 Gbps CNIC (~50 GB/s) per GPU, one SNIC of s·B per node (docs/design.md §2, §5).
  static const std::vector<node_profile> nodes = {
      {"h800-8", "8× H800, 8 CNICs + 1 SNIC of 400 Gbps, 500 GB/s DRAM (the paper's nodes)", "h800", 8, 50, 1, 500},
      {"h100-8", "8× H100, 8 CNICs + 1 SNIC of 400 Gbps, 500 GB/s DRAM", "h100", 8, 50, 1, 500},
      {"h200-8", "8× H200, 8 CNICs + 2 SNICs of 400 Gbps, 600 GB/s DRAM", "h200", 8, 50, 2, 600},
  };
  return nodes;
}

namespace {
template <class T>
const T& find_by_name(const std::vector<T>& list, const std::string& name, const char* what) {
  return find_named(list, name, what);
}
}  // namespace

const gpu_profile& find_gpu(const std::string& name) { return find_by_name(gpu_profiles(), name, "GPU profile"); }
const node_profile& find_node(const std::string& name) { return find_by_name(node_profiles(), name, "node profile"); }

double alpha_tokens(const node_profile& node, uint64_t kv_bytes_per_token, double seconds) {
  if (kv_bytes_per_token == 0) throw user_error("alpha: KV bytes per token must be positive");
  return node.snic_gb_per_s() * 1e9 * seconds / double(kv_bytes_per_token);
}

double beta_tokens(const gpu_profile& gpu, double flops_per_token, double mfu, double seconds) {
  if (!(flops_per_token > 0)) throw user_error("beta: FLOPs per token must be positive");
  return seconds / gpu.seconds_for(flops_per_token, mfu);
}

}  // namespace dualpath
