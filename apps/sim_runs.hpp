#pragma once
// What `dualpath sim`, `dualpath plan` and `dualpath bench sim` share: the paper-scale default cluster, the
// command-line overrides of a cluster file, and one simulated run of a policy over a workload.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "apps/workload.hpp"
#include "core/cluster_config.hpp"
#include "sim/sim.hpp"

namespace dualpath::cli {

// DS 660B on 2P4D nodes of 8 H800s (docs/design.md §12, §17): B = 50 GB/s CNIC per GPU, 80 GB of DRAM for KV
// per node, and what the paper does not give, as bench/experiments/paper/ assumes it: a 22 GB/s effective
// SNIC read rate per node, MFU 0.28, 40 GB of HBM for KV per GPU.
cluster_config paper_cluster();

struct cluster_overrides {
  std::optional<uint32_t> prefill_nodes, decode_nodes, gpus_per_node;
  std::optional<std::string> model, gpu;
  std::optional<double> mfu, snic_gb_per_s, cnic_gb_per_s, dram_gb, hbm_gb, prefill_hbm_gb;
  bool adaptive = false;
};
void add_cluster_overrides(CLI::App* cmd, cluster_overrides& o);
// The cluster file (or the paper's cluster) with the overrides applied, validated.
cluster_config sim_cluster(const std::string& cluster_file, const cluster_overrides& o);

struct sim_flags {
  bool ep_lockstep = false;
  bool stale_view = false;
  std::string write_back = "snic";
};
void add_sim_flags(CLI::App* cmd, sim_flags& f);

// One simulated run; prints a progress line on stderr unless `quiet`.
sim::sim_result simulate(const cluster_config& c, const sim_flags& f, const std::string& policy,
                         const workload_options& w, const std::string& label, bool quiet);

}  // namespace dualpath::cli
