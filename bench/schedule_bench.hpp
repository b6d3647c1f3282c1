#pragma once
// `dualpath bench schedule`: the cost of scheduling decisions (docs/design.md §7) on a synthetic cluster of
// the paper's largest size, one core, no actors: the policy's assign() is what is timed.
#include <cstdint>
#include <random>
#include <string>

#include "schedule/policy.hpp"

namespace dualpath::bench {

struct schedule_bench_options {
  uint32_t engines = 1152;  // total, 8 per node; one third prefill (the paper's 1P2D ratio)
  uint64_t requests = 100000;
  std::string policy = "balanced";
  uint32_t repeats = 3;  // full runs; the median µs/request is reported
  uint64_t seed = 1;
};

struct schedule_bench_result {
  std::string policy;
  uint32_t engines = 0, prefill_nodes = 0, decode_nodes = 0;
  uint64_t requests = 0, fetches = 0;
  double us_per_request = 0;  // median over repeats of (time in assign) / (requests assigned)
  double us_per_fetch = 0;
  uint64_t path_pe = 0, path_de = 0, path_split = 0;  // last repeat

  std::string to_json() const;
  std::string to_text() const;
};

// The synthetic cluster's nodes: 8 engines each, a decode GPU's 60 GiB KV arena per engine.
constexpr uint32_t engines_per_node = 8;
constexpr uint64_t hbm_per_engine = 60ull << 30;

// One agent turn of the paper's workload shape (8K-56K hit + 128-768 appended tokens), `kv_per_token` bytes
// of KV a token, hits whole blocks of `block` tokens.
schedule::request_info synthetic_request(uint64_t id, std::mt19937_64& rng, uint64_t kv_per_token, uint32_t block);
// The policy parameters of the paper's cluster: DeepSeek-V3.2 KV, a 400 Gbps SNIC (α), ~20K tokens/s of
// prefill per GPU (β).
schedule::policy_params paper_scale_params();

// Throws user_error for bad options (unknown policy, fewer than 16 engines, ...).
schedule_bench_result run_schedule_bench(const schedule_bench_options& options);

}  // namespace dualpath::bench
