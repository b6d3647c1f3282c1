// `dualpath cost`: KV bytes, FLOPs and the cache-compute ratio of one agent turn (docs/design.md §6).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "apps/command_registry.hpp"
#include "core/cost_model.hpp"
#include "core/status.hpp"
#include "core/model_catalog.hpp"

namespace {

using namespace dualpath;

struct options {
  std::string model = "deepseek-v3.2";
  uint64_t context = 32721;
  uint64_t append = 429;
  bool json = false;
};

void run(const options& o) {
  const auto& m = find_model(o.model);
  if (o.append == 0) throw user_error("cost: --append must be at least 1 (a turn prefills something)");
  const double kv = double(m.kv_bytes_per_token());
  const double f = flops_per_token(m, o.context);
  const double ratio = cache_compute_ratio_gb_per_pflop(m, o.context, o.append);
  const double hit_gb = double(o.context) * kv / 1e9;
  const double prefill_tflop = prefill_flops(m, o.context, o.append) / 1e12;
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = m.name;
    j["context"] = o.context;
    j["append"] = o.append;
    j["kv_bytes_per_token"] = m.kv_bytes_per_token();
    j["flops_per_token"] = f;
    j["attention_flops_per_token"] = attention_flops_per_token(m, o.context);
    j["ratio_gb_per_pflop"] = ratio;
    j["hit_kv_gb"] = hit_gb;
    j["prefill_tflop"] = prefill_tflop;
    cli::print(j.dump(2) + "\n");
    return;
  }
  std::string out =
      fmt::format("{} ({}), context {} + append {}\n", m.name, to_string(m.attention), o.context, o.append);
  out += fmt::format("  KV bytes per token       {} ({} layers × {} B)\n", m.kv_bytes_per_token(), m.layers,
                     m.kv_bytes_per_token_layer);
  out +=
      fmt::format("  FLOPs per new token      {:.4g} (attention {:.4g})\n", f, attention_flops_per_token(m, o.context));
  out += fmt::format("  hit KV to load           {:.3f} GB\n", hit_gb);
  out += fmt::format("  prefill work             {:.2f} TFLOP\n", prefill_tflop);
  out += fmt::format("  cache-compute ratio      {:.1f} GB/PFLOP\n", ratio);
  cli::print(out);
}

void setup(CLI::App& root) {
  auto o = std::make_shared<options>();
  auto* cmd =
      root.add_subcommand("cost", "KV bytes, FLOPs per token and cache-compute ratio of a turn (docs/design.md §6)");
  cmd->add_option("--model,-m", o->model, "Catalog model (see `dualpath models`)")->capture_default_str();
  cmd->add_option("--context,-L", o->context, "Hit (cached) context tokens")->capture_default_str();
  cmd->add_option("--append,-A", o->append, "Appended tokens to prefill")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([o] { run(*o); });
}

}  // namespace

DUALPATH_COMMAND(setup);
