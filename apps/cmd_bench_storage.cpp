// `dualpath bench storage`: block store write/read throughput against fio, and the SNIC gate's cap.
#include "apps/bench_command.hpp"
#include "bench/storage_bench.hpp"

namespace {

void setup(CLI::App& root) {
  namespace b = dualpath::bench;
  auto no_fio = std::make_shared<bool>(false);
  auto no_fsync = std::make_shared<bool>(false);
  auto run = [no_fio, no_fsync](b::storage_bench_options o) {
    o.fio = !*no_fio;
    o.fsync = !*no_fsync;
    return b::run_storage_bench(o);
  };
  auto [cmd, opt] = dualpath::cli::add_bench<b::storage_bench_options>(
      root, "storage", "Block store throughput and latency on a directory (vs fio)", run);
  cmd->add_option("--dir", opt->dir, "Directory to benchmark (a fresh subdirectory is used and removed)")->required();
  cmd->add_option("--block-bytes", opt->block_bytes, "Full Block payload bytes")->capture_default_str();
  cmd->add_option("--blocks", opt->blocks, "Blocks to write and read")->capture_default_str();
  cmd->add_option("--depth", opt->depth, "Reads in flight")->capture_default_str();
  cmd->add_option("--layers", opt->layers, "Layers per block (payload = layers x 64 tokens x bytes)")
      ->capture_default_str();
  cmd->add_option("--repeats", opt->repeats, "Read passes and fio runs (medians)")->capture_default_str();
  cmd->add_option("--cap", opt->cap_gb_per_s, "Also read --cap-bytes through an SNIC gate capped at this GB/s");
  cmd->add_option("--cap-bytes", opt->cap_bytes, "Bytes to read through the capped gate")->capture_default_str();
  cmd->add_flag("--no-fio", *no_fio, "Do not run fio");
  cmd->add_flag("--no-fsync", *no_fsync, "Do not fsync written blocks");
}

}  // namespace

DUALPATH_COMMAND(setup);
