// `dualpath bounds`: docs/design.md §5 — the P/D ratios that let both read paths run without a CNIC or
// DRAM becoming the bottleneck, and the headroom each link keeps for a given layout.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "apps/command_registry.hpp"
#include "core/bounds.hpp"
#include "core/status.hpp"

namespace {

using namespace dualpath;

struct options {
  bounds_input in;
  uint32_t prefill = 0, decode = 0;
  bool json = false;
};

nlohmann::ordered_json to_json(const bounds_report& rep) {
  nlohmann::ordered_json j;
  j["gpus_per_node"] = rep.input.gpus_per_node;
  j["snic_ratio"] = rep.input.snic_ratio;
  j["cnic_gb_per_s"] = rep.input.cnic_gb_per_s;
  j["dram_gb_per_s"] = rep.input.dram_gb_per_s;
  j["pd_min"] = rep.pd_min;
  j["pd_max"] = rep.pd_max;
  j["pd_min_fraction"] = as_fraction(rep.pd_min);
  j["pd_max_fraction"] = as_fraction(rep.pd_max);
  j["binding"] = rep.binding;
  if (rep.pd) {
    j["prefill_nodes"] = *rep.input.prefill_nodes;
    j["decode_nodes"] = *rep.input.decode_nodes;
    j["pd"] = *rep.pd;
    j["feasible"] = *rep.feasible;
    j["pe_read_gb_per_s"] = *rep.pe_read_gb_per_s;
    j["dual_read_gb_per_s"] = *rep.dual_read_gb_per_s;
  }
  auto rows = nlohmann::ordered_json::array();
  for (const auto& r : rep.rows) {
    nlohmann::ordered_json o;
    o["name"] = r.name;
    o["link"] = r.link;
    o["load"] = r.load;
    o["condition"] = r.condition;
    o["kind"] = to_string(r.kind);
    if (r.kind != bound_kind::fixed) o["limit"] = r.limit;
    o["holds"] = r.holds;
    o["binding"] = r.binding;
    o["capacity_gb_per_s"] = r.capacity_gb_per_s;
    if (r.load_gb_per_s) {
      o["load_gb_per_s"] = *r.load_gb_per_s;
      o["headroom"] = *r.headroom;
    }
    rows.push_back(o);
  }
  j["constraints"] = rows;
  return j;
}

std::string to_text(const bounds_report& rep) {
  const auto& in = rep.input;
  std::string out =
      fmt::format("g = {}, s = {}, B = {} GB/s per CNIC, SNIC = {} GB/s per node, M = {} GB/s\n", in.gpus_per_node,
                  in.snic_ratio, in.cnic_gb_per_s, in.snic_ratio * in.cnic_gb_per_s, in.dram_gb_per_s);
  out += fmt::format("{:<14} {:<6} {:<24} {:>9}  {}\n", "row", "kind", "condition", "P/D limit",
                     rep.pd ? "load GB/s / capacity, headroom" : "");
  for (const auto& r : rep.rows) {
    std::string limit = r.kind == bound_kind::fixed ? (r.holds ? "holds" : "VIOLATED") : as_fraction(r.limit);
    std::string extra;
    if (r.load_gb_per_s) {
      extra = fmt::format("{:7.2f} / {:<5g} {:6.1f}%", *r.load_gb_per_s, r.capacity_gb_per_s, 100 * *r.headroom);
    }
    if (r.binding) extra += "  binding";
    out += fmt::format("{:<14} {:<6} {:<24} {:>9}  {}\n", r.name, to_string(r.kind), r.condition, limit, extra);
  }
  std::string binding;
  for (const auto& b : rep.binding) binding += (binding.empty() ? "" : ", ") + b;
  out += fmt::format("feasible P/D: {} <= P/D <= {}  ({:.4f} .. {:.4f}); binding: {}\n", as_fraction(rep.pd_min),
                     as_fraction(rep.pd_max), rep.pd_min, rep.pd_max, binding);
  if (rep.pd) {
    out += fmt::format(
        "layout {}P{}D: P/D = {} is {}; storage reads {:g} GB/s on the PE path alone, {:g} GB/s with both paths\n",
        *in.prefill_nodes, *in.decode_nodes, as_fraction(*rep.pd),
        *rep.feasible ? "feasible" : "NOT feasible (a link above is overloaded)", *rep.pe_read_gb_per_s,
        *rep.dual_read_gb_per_s);
  }
  return out;
}

void run(options o) {
  if (o.prefill || o.decode) {
    o.in.prefill_nodes = o.prefill;
    o.in.decode_nodes = o.decode;
  }
  const auto rep = evaluate_bounds(o.in);
  if (!rep.feasible_hardware) throw user_error("bounds: infeasible hardware: " + rep.infeasibility());
  cli::print(o.json ? to_json(rep).dump(2) + "\n" : to_text(rep));
}

void setup(CLI::App& root) {
  auto o = std::make_shared<options>();
  auto* cmd =
      root.add_subcommand("bounds", "P/D ratios that keep every CNIC and DRAM below capacity (docs/design.md §5)");
  cmd->add_option("--gpus-per-node,-g", o->in.gpus_per_node, "g: GPUs per node")->capture_default_str();
  cmd->add_option("--snic-ratio,-s", o->in.snic_ratio, "s: SNIC bandwidth per node as a multiple of B")
      ->capture_default_str();
  cmd->add_option("--cnic-gb-per-s,-B", o->in.cnic_gb_per_s, "B: CNIC bandwidth per GPU, GB/s")->capture_default_str();
  cmd->add_option("--dram-gb-per-s,-M", o->in.dram_gb_per_s, "M: DRAM bandwidth per node, GB/s")->capture_default_str();
  cmd->add_option("--prefill-nodes,-P", o->prefill, "P: prefill nodes of a layout to check");
  cmd->add_option("--decode-nodes,-D", o->decode, "D: decode nodes of a layout to check");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([o] { run(*o); });
}

}  // namespace

DUALPATH_COMMAND(setup);
