// `dualpath models`: the catalog with the numbers the rest of the system uses.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "apps/command_registry.hpp"
#include "core/model_catalog.hpp"

namespace {

void print_models(bool as_json) {
  if (as_json) {
    auto list = nlohmann::ordered_json::array();
    for (const auto& m : dualpath::model_catalog()) {
      nlohmann::ordered_json j;
      j["name"] = m.name;
      j["description"] = m.description;
      j["attention"] = dualpath::to_string(m.attention);
      j["layers"] = m.layers;
      j["hidden"] = m.hidden;
      j["heads"] = m.heads;
      j["kv_heads"] = m.kv_heads;
      j["head_dim"] = m.head_dim;
      j["kv_bytes_per_token_layer"] = m.kv_bytes_per_token_layer;
      j["kv_bytes_per_token"] = m.kv_bytes_per_token();
      j["block_tokens"] = m.block_tokens;
      j["full_block_bytes"] = m.full_block_bytes();
      j["active_params"] = m.active_params;
      j["total_params"] = m.total_params;
      if (m.attention == dualpath::attention_kind::dsa) {
        j["dsa_top_k"] = m.dsa_top_k;
        j["indexer_heads"] = m.indexer_heads;
        j["indexer_dim"] = m.indexer_dim;
      }
      j["runnable"] = m.runnable;
      list.push_back(j);
    }
    dualpath::cli::print(list.dump(2) + "\n");
    return;
  }
  std::string out = fmt::format("{:<14} {:<5} {:>6} {:>8} {:>14} {:>6} {:>12} {:>10}\n", "model", "attn", "layers",
                                "hidden", "kv B/token", "block", "active", "total");
  for (const auto& m : dualpath::model_catalog()) {
    out += fmt::format("{:<14} {:<5} {:>6} {:>8} {:>14} {:>6} {:>12.3g} {:>10.3g}\n", m.name,
                       dualpath::to_string(m.attention), m.layers, m.hidden, m.kv_bytes_per_token(), m.block_tokens,
                       m.active_params, m.total_params);
  }
  dualpath::cli::print(out);
}

void setup(CLI::App& root) {
  auto json = std::make_shared<bool>(false);
  auto* cmd = root.add_subcommand("models", "List the model catalog (KV bytes per token, parameters)");
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->callback([json] { print_models(*json); });
}

}  // namespace

DUALPATH_COMMAND(setup);
