#pragma once
// The storage-bound 1P2D cluster of bench/experiments/storage_bound.toml as a config: a modeled DS 27B whose
// SNICs (50 MB/s) cannot feed the prefill engine, the case that the simulator and the runtime are compared on.
#include <string>

#include "core/cluster_config.hpp"

namespace dualpath::test {

inline cluster_config storage_bound_cluster(const std::string& store_dir = "dualpath-data") {
  cluster_config c;
  c.model = "ds-27b";
  c.backend = backend_kind::modeled;
  c.gpu = "h800";
  c.mfu = 0.013;
  c.prefill_nodes = 1;
  c.decode_nodes = 2;
  c.block_tokens = 64;
  c.snic_gb_per_s = 0.05;
  c.dram_buffer_gb = 0.5;
  c.hbm_gb = 0.5;
  c.quota_scope = quota_scope_kind::forward;
  c.store_dir = store_dir;
  return c;
}

}  // namespace dualpath::test
