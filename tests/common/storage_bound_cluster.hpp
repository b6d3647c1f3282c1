#pragma once
// The storage-bound 1P2D cluster of bench/experiments/storage_bound.toml, read from that file: a modeled DS 27B
// whose SNICs (50 MB/s) cannot feed the prefill engine, the case that the simulator and the runtime are
// compared on.
#include <string>

#include "core/cluster_config.hpp"

namespace dualpath::test {

inline cluster_config storage_bound_cluster(const std::string& store_dir = "dualpath-data") {
  cluster_config c = load_cluster_config(DUALPATH_SOURCE_DIR "/bench/experiments/storage_bound.toml");
  c.store_dir = store_dir;
  return c;
}

}  // namespace dualpath::test
