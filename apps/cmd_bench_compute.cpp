// `dualpath bench compute`: prefill/decode throughput of a compute backend vs sgemm on the model's own shapes.
#include "apps/command_registry.hpp"
#include "bench/compute_bench.hpp"

namespace {

void setup(CLI::App& root) {
  auto& bench = dualpath::cli::group(root, "bench", "Benchmarks");
  auto* cmd = bench.add_subcommand("compute", "Prefill and decode throughput of a compute backend (vs sgemm)");
  auto opt = std::make_shared<dualpath::bench::compute_bench_options>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("--backend", opt->backend, "cpu | cuda | modeled")->capture_default_str();
  cmd->add_option("--model", opt->model, "Catalog model or model directory")->capture_default_str();
  cmd->add_option("--context", opt->context, "Cached tokens the prefill attends to")->capture_default_str();
  cmd->add_option("--append", opt->append, "New tokens computed by the prefill")->capture_default_str();
  cmd->add_option("--decode-batch", opt->decode_batch, "Requests per decode step")->capture_default_str();
  cmd->add_option("--repeats", opt->repeats, "Timed runs (medians are reported)")->capture_default_str();
  cmd->add_option("--gpu", opt->gpu_profile, "GPU profile (modeled backend)")->capture_default_str();
  cmd->add_option("--mfu", opt->mfu, "Model FLOPs utilisation (modeled backend)")->capture_default_str();
  cmd->add_option("--seed", opt->seed, "Weight seed for catalog models")->capture_default_str();
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->callback([opt, json] {
    const auto r = dualpath::bench::run_compute_bench(*opt);
    dualpath::cli::print(*json ? r.to_json() : r.to_text());
  });
}

}  // namespace

DUALPATH_COMMAND(setup);
