// `dualpath bench transport`: Layer Block write throughput vs memcpy, and model latency under kv load.
#include "apps/bench_command.hpp"
#include "apps/cli_checks.hpp"
#include "bench/transport_bench.hpp"

namespace {

void setup(CLI::App& root) {
  namespace b = dualpath::bench;
  auto [cmd, opt] = dualpath::cli::add_bench<b::transport_bench_options>(
      root, "transport", "libfabric Layer Block throughput (vs memcpy) and model latency under kv load",
      b::run_transport_bench);
  cmd->add_option("--provider", opt->provider, "libfabric provider: shm, tcp, verbs, efa, ...")->capture_default_str();
  cmd->add_option("--mode", opt->mode, "throughput: block writes vs memcpy; latency: model messages under kv load")
      ->transform(dualpath::cli::one_of(std::map<std::string, b::transport_bench_mode>{
          {"throughput", b::transport_bench_mode::throughput}, {"latency", b::transport_bench_mode::latency}}))
      ->default_str("throughput");
  cmd->add_option("--slice-bytes", opt->slice_bytes, "Slice size: transfers are cut into slices of this size")
      ->capture_default_str();
  cmd->add_option("--total-bytes", opt->total_bytes, "Bytes written per throughput run")->capture_default_str();
  cmd->add_option("--span-bytes", opt->span_bytes, "Source and destination bytes the blocks cycle through")
      ->capture_default_str();
  cmd->add_option("--block-bytes", opt->block_bytes, "Layer Block size (default: the slice size)");
  cmd->add_option("--depth", opt->depth, "Layer Blocks outstanding")->capture_default_str();
  cmd->add_option("--gather", opt->gather, "Layer Blocks from separate slots each write gathers (1 = one a write)")
      ->capture_default_str();
  cmd->add_option("--max-inflight", opt->max_inflight, "Slices posted to the provider at once")->capture_default_str();
  cmd->add_option("--local-copies", opt->local_copies,
                  "shm: the writer copies into its peer itself, not through the provider")
      ->capture_default_str();
  cmd->add_flag("--peer-process", opt->peer_process,
                "Throughput: the peer endpoint in a child process with its buffer in a memfd, as node processes on "
                "one host have them");
  cmd->add_option("--kv-guard-bytes", opt->kv_guard_bytes,
                  "kv slice and window next to model traffic (0 = 32 KiB on tcp, off on shm)")
      ->capture_default_str();
  cmd->add_option("--repeats", opt->repeats, "Throughput runs (median reported)")->capture_default_str();
  cmd->add_option("--rate", opt->rate_gb_per_s, "Emulated CNIC cap in GB/s per direction (0 = uncapped)")
      ->capture_default_str();
  cmd->add_option("--kv-share", opt->kv_share, "kv share of service while model waits")->capture_default_str();
  cmd->add_option("--message-bytes", opt->message_bytes, "Latency mode: model message size")->capture_default_str();
  cmd->add_option("--messages", opt->messages, "Latency mode: model messages per phase")->capture_default_str();
  cmd->add_option("--gap-us", opt->gap_us, "Latency mode: pause after each model message (us)")->capture_default_str();
}

}  // namespace

DUALPATH_COMMAND(setup);
