#pragma once
// `dualpath bench compute`: prefill and decode throughput of a compute backend on a model's real shapes, and
// the two roofs of the machine it runs on in the same run: a GEMM on the model's linear-layer shapes (prefill
// is compute-bound; OpenBLAS sgemm for cpu, cuBLAS bf16 for cuda) and memory bandwidth (decode is
// memory-bound; a read sweep on the cpu, a device-to-device copy on a GPU). KV lives where the backend reads
// it in place (device memory for cuda).
#include <cstdint>
#include <string>

namespace dualpath::bench {

struct compute_bench_options {
  std::string backend = "cpu";       // cpu | cuda | modeled
  std::string model = "small";       // catalog name or model directory
  uint32_t context = 4096;           // cached tokens the prefill attends to (random bf16 KV)
  uint32_t append = 512;             // new tokens of the prefill
  uint32_t decode_batch = 8;         // requests per decode step, each at position context + append
  uint32_t repeats = 3;              // timed runs of each part; medians are reported
  std::string gpu_profile = "h800";  // modeled only
  double mfu = 0.4;                  // modeled only
  uint64_t seed = 1;
};

struct compute_bench_result {
  std::string backend, model;
  uint32_t context = 0, append = 0, decode_batch = 0;
  double prefill_s = 0;               // median seconds of one prefill pass (all layers)
  double prefill_tokens_per_s = 0;    // append / prefill_s
  double gflop_per_s = 0;             // cost-model FLOPs of the prefill (docs/design.md §6) / prefill_s
  double decode_step_s = 0;           // median seconds of one decode step over the batch
  double decode_tokens_per_s = 0;     // decode_batch / decode_step_s
  double sgemm_gflop_per_s = 0;       // cpu: OpenBLAS sgemm on [append x hidden] x the model's linear weights;
                                      // cuda: cuBLAS bf16 on the same shapes; 0 for modeled
  double prefill_vs_sgemm = 0;        // median over rounds of prefill GFLOP/s / the next GEMM round's
  double decode_bytes = 0;            // weights as the backend holds them + the batch's KV one decode step reads
  double decode_kv_bytes = 0;         // the KV part of decode_bytes
  double memory_gb_per_s = 0;         // cpu: read bandwidth with every core reading (1 GiB); cuda: a 1-GiB
                                      // device-to-device copy, bytes read plus written
  double decode_vs_bandwidth = 0;     // median over rounds of decode_bytes / step time / bandwidth
  double decode_linear_flops = 0;     // a step's FLOPs in the linear layers and LM head: 2 x active params x batch
  double decode_attention_flops = 0;  // ... and in its attention over every request's KV
  // Median over rounds of the step's roofline time / its step time: each part (attention, linear layers) takes
  // the larger of its bytes over the round's bandwidth and its FLOPs over the GEMM roof. At a batch of 8 bf16
  // weights give the linear layers 8 FLOPs a byte, past what two AVX2 cores multiply at the read bandwidth, so
  // there the step is bound by arithmetic in part and decode_vs_bandwidth cannot reach 1 (docs/experiments.md).
  double decode_vs_roof = 0;
  double decode_linear_s = 0;     // cpu: the timed steps' mean seconds in their linear layers (0 elsewhere)
  double decode_attention_s = 0;  // cpu: ... and in their attention
  double decode_other_s = 0;      // cpu: ... and in the rest (their mean seconds less the two above)
  double fit_gflop_per_s = 0;     // the backend's FLOPs->time fit, marginal rate

  std::string to_json() const;
  std::string to_text() const;
};

compute_bench_result run_compute_bench(const compute_bench_options& options);

}  // namespace dualpath::bench
