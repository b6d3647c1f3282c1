// `dualpath bench compute`: prefill/decode throughput of a compute backend vs sgemm on the model's own shapes.
#include "apps/bench_command.hpp"
#include "bench/compute_bench.hpp"

namespace {

void setup(CLI::App& root) {
  namespace b = dualpath::bench;
  auto [cmd, opt] = dualpath::cli::add_bench<b::compute_bench_options>(
      root, "compute", "Prefill and decode throughput of a compute backend (vs sgemm)", b::run_compute_bench);
  cmd->add_option("--backend", opt->backend, "cpu | cuda | modeled")->capture_default_str();
  cmd->add_option("--model", opt->model, "Catalog model or model directory")->capture_default_str();
  cmd->add_option("--context", opt->context, "Cached tokens the prefill attends to")->capture_default_str();
  cmd->add_option("--append", opt->append, "New tokens computed by the prefill")->capture_default_str();
  cmd->add_option("--decode-batch", opt->decode_batch, "Requests per decode step")->capture_default_str();
  cmd->add_option("--repeats", opt->repeats, "Timed runs (medians are reported)")->capture_default_str();
  cmd->add_option("--gpu", opt->gpu_profile, "GPU profile (modeled backend)")->capture_default_str();
  cmd->add_option("--mfu", opt->mfu, "Model FLOPs utilisation (modeled backend)")->capture_default_str();
  cmd->add_option("--seed", opt->seed, "Weight seed for catalog models")->capture_default_str();
}

}  // namespace

DUALPATH_COMMAND(setup);
