#pragma once
// `dualpath bench transport`: Layer Block write throughput between two libfabric endpoints next to a
// single-thread memcpy of the same bytes, and `model`-class message latency while `kv` saturates the
// link, with isolation on and off (docs/design.md §8).
#include <cstdint>
#include <string>

namespace dualpath::bench {

// throughput: Layer Block writes against memcpy; latency: model messages while kv traffic saturates the link.
enum class transport_bench_mode { throughput, latency };
const char* to_string(transport_bench_mode m);

struct transport_bench_options {
  std::string provider = "shm";
  transport_bench_mode mode = transport_bench_mode::throughput;
  uint64_t slice_bytes = 1 << 20;
  uint64_t total_bytes = 1ull << 30;  // bytes written per repeat (throughput) or by kv under load (latency)
  // Throughput: the source and destination bytes the blocks cycle through. 64 MiB sits in a large last-level
  // cache; a span beyond it measures copies from DRAM, as a node's buffers of gigabytes are.
  uint64_t span_bytes = 64ull << 20;
  uint64_t block_bytes = 0;     // Layer Block size; 0 = slice_bytes
  uint32_t depth = 16;          // Layer Blocks submitted and not yet completed
  uint32_t gather = 1;          // Layer Blocks a write gathers from separate slots (endpoint::write_gather)
  uint32_t max_inflight = 4;    // slices posted to the provider at once
  bool local_copies = true;     // shm: the writer copies into its peer itself (transport::fabric_options)
  bool peer_process = false;    // throughput: the peer endpoint in a child process, its buffer a memfd
  uint64_t kv_guard_bytes = 0;  // kv slice and window next to model traffic; 0 = the transport's default
  uint32_t repeats = 3;         // throughput runs; the median is reported
  double rate_gb_per_s = 0;     // emulated CNIC cap; 0 = uncapped
  double kv_share = 0.01;
  uint64_t message_bytes = 65536;  // latency mode: size of one model message
  uint32_t messages = 2000;        // latency mode: model messages per phase
  uint32_t gap_us = 100;           // latency mode: pause after each model message completes
};

struct transport_bench_result {
  transport_bench_options options;  // as run: block_bytes resolved
  std::string fabric_provider;      // what libfabric picked, e.g. "tcp;ofi_rxm" for tcp
  // throughput mode
  double gb_per_s = 0, memcpy_gb_per_s = 0, p50_us = 0, p99_us = 0;
  double cma_gb_per_s = 0;  // process_vm_writev over the same blocks (0: refused)
  // latency mode: model message latency idle, under kv load with isolation, and without
  double idle_p50_us = 0, idle_p99_us = 0;
  double isolated_p50_us = 0, isolated_p99_us = 0, isolated_kv_gb_per_s = 0;
  double shared_p50_us = 0, shared_p99_us = 0, shared_kv_gb_per_s = 0;

  std::string to_json() const;
  std::string to_text() const;
};

// Throws user_error for bad options or an unavailable provider.
transport_bench_result run_transport_bench(const transport_bench_options& options);

}  // namespace dualpath::bench
