// `dualpath models`: the catalog with the numbers the rest of the system uses.
#include <fmt/format.h>

#include "apps/command_registry.hpp"
#include "core/model_catalog.hpp"

namespace {

void print_models() {
  std::string out = fmt::format("{:<14} {:<5} {:>6} {:>8} {:>14} {:>12} {:>10}\n", "model", "attn", "layers",
                                "hidden", "kv B/token", "active", "total");
  for (const auto& m : dualpath::model_catalog()) {
    out += fmt::format("{:<14} {:<5} {:>6} {:>8} {:>14} {:>11.3g} {:>10.3g}\n", m.name,
                       dualpath::to_string(m.attention), m.layers, m.hidden, m.kv_bytes_per_token(),
                       m.active_params, m.total_params);
  }
  dualpath::cli::print(out);
}

void setup(CLI::App& root) {
  auto* cmd = root.add_subcommand("models", "List the model catalog (KV bytes per token, parameters)");
  cmd->callback(print_models);
}

}  // namespace

DUALPATH_COMMAND(setup);
