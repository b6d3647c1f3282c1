#pragma once
// The embedded default cluster of `run` and `serve` (README): SNICs capped so storage, not the tiny model's
// compute, is the bottleneck.

namespace dualpath::cli {

inline constexpr const char* default_cluster = R"(
[model]
name = "tiny"
backend = "cpu"
seed = 7

[cluster]
prefill_nodes = 1
decode_nodes = 2
engines_per_node = 1
block_tokens = 16

[hardware]
snic_gb_per_s = 0.004
cnic_gb_per_s = 0
dram_buffer_gb = 0.064
hbm_gb = 0.064
provider = "shm"

[storage]
dir = "dualpath-data"

[schedule]
policy = "dualpath"
quota_ms = 300
)";

}  // namespace dualpath::cli
