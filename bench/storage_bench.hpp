#pragma once
// `dualpath bench storage`: write throughput, batched read throughput and latency of the block store
// on a directory, next to what fio reaches on the same directory, plus the rate cap of the SNIC gate.
#include <cstdint>
#include <string>
#include <vector>

namespace dualpath::bench {

struct storage_bench_options {
  std::string dir;                 // the benchmark works in a fresh subdirectory and removes it
  uint64_t block_bytes = 1 << 20;  // Full Block payload bytes
  uint32_t blocks = 256;
  uint32_t depth = 32;   // reads in flight
  uint32_t layers = 8;   // payload = layers x 64 tokens x (block_bytes / layers / 64)
  uint32_t repeats = 3;  // read passes (and fio runs); medians are reported
  bool fsync = true;
  bool fio = true;          // also run fio when it is installed
  double cap_gb_per_s = 0;  // > 0: also read cap_bytes through a capped SNIC gate
  uint64_t cap_bytes = 100'000'000;
};

struct storage_bench_result {
  uint64_t block_bytes = 0, file_bytes = 0, blocks = 0, depth = 0;
  bool direct_io = false;
  bool io_uring = false;  // false: the store fell back to blocking reads on a thread pool
  double write_gb_per_s = 0, read_gb_per_s = 0, read_p50_us = 0, read_p99_us = 0;
  double gate_read_gb_per_s = 0;  // the same reads through an uncapped snic_gate
  double fio_read_gb_per_s = 0;   // 0 when fio did not run
  double read_vs_fio = 0;         // median over passes of (our pass / the fio run of the same pass)
  double gate_vs_fio = 0;         // the same for the pass through the uncapped SNIC gate
  // Each pass's GB/s, in pass order (fio's only where it ran): how far the disk moves between passes.
  std::vector<double> pass_read, pass_gate, pass_fio;
  uint64_t verified_blocks = 0;  // blocks read whose header and every layer checksum were checked
  bool fio_direct = false;
  std::string fio_note;  // why fio did not run, or how it ran
  double cap_gb_per_s = 0, cap_seconds = 0, cap_expected_seconds = 0;
  uint64_t cap_bytes = 0;

  std::string to_json() const;
  std::string to_text() const;
};

// Throws user_error for bad options or an unusable directory.
storage_bench_result run_storage_bench(const storage_bench_options& options);

}  // namespace dualpath::bench
