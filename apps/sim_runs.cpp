#include "apps/sim_runs.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include "core/model_catalog.hpp"
#include "core/status.hpp"

namespace dualpath::cli {

cluster_config paper_cluster() {
  return parse_cluster_config(R"(
[model]
name = "deepseek-v3.2"
backend = "modeled"
gpu = "h800"
mfu = 0.28

[cluster]
prefill_nodes = 2
decode_nodes = 4
gpus_per_node = 8
block_tokens = 64

[hardware]
snic_gb_per_s = 22
cnic_gb_per_s = 50
dram_buffer_gb = 80
hbm_gb = 40

[schedule]
policy = "dualpath"
)",
                              "paper cluster");
}

void add_cluster_overrides(CLI::App* cmd, cluster_overrides& o) {
  cmd->add_option("--prefill-nodes", o.prefill_nodes, "Override cluster.prefill_nodes (P)");
  cmd->add_option("--decode-nodes", o.decode_nodes, "Override cluster.decode_nodes (D)");
  cmd->add_option("--gpus-per-node", o.gpus_per_node, "Override cluster.gpus_per_node (g, one engine per GPU)");
  cmd->add_option("--model", o.model, "Override model.name");
  cmd->add_option("--gpu", o.gpu, "Override model.gpu (GPU profile)");
  cmd->add_option("--mfu", o.mfu, "Override model.mfu");
  cmd->add_option("--snic-gbps", o.snic_gb_per_s, "Override hardware.snic_gb_per_s (per node)");
  cmd->add_option("--cnic-gbps", o.cnic_gb_per_s, "Override hardware.cnic_gb_per_s (per GPU and direction)");
  cmd->add_option("--dram-gb", o.dram_gb, "Override hardware.dram_buffer_gb (per node)");
  cmd->add_option("--hbm-gb", o.hbm_gb, "Override hardware.hbm_gb (KV per GPU)");
  cmd->add_option("--prefill-hbm-gb", o.prefill_hbm_gb, "Override hardware.prefill_hbm_gb (KV per prefill GPU)");
  cmd->add_flag("--adaptive", o.adaptive,
                "Adaptive P/D (planner.adaptive): nodes move between roles as the load calls for it; the split "
                "given is where it starts");
}

cluster_config sim_cluster(const std::string& cluster_file, const cluster_overrides& o) {
  cluster_config c = cluster_file.empty() ? paper_cluster() : load_cluster_config(cluster_file);
  if (o.prefill_nodes) c.prefill_nodes = *o.prefill_nodes;
  if (o.decode_nodes) c.decode_nodes = *o.decode_nodes;
  if (o.gpus_per_node) c.engines_per_node = *o.gpus_per_node;
  if (o.model) c.model = *o.model;
  if (o.gpu) c.gpu = *o.gpu;
  if (o.mfu) c.mfu = *o.mfu;
  if (o.snic_gb_per_s) c.snic_gb_per_s = *o.snic_gb_per_s;
  if (o.cnic_gb_per_s) c.cnic_gb_per_s = *o.cnic_gb_per_s;
  if (o.dram_gb) c.dram_buffer_gb = *o.dram_gb;
  if (o.hbm_gb) c.hbm_gb = *o.hbm_gb;
  if (o.prefill_hbm_gb) c.prefill_hbm_gb = *o.prefill_hbm_gb;
  if (o.adaptive) c.adaptive = true;
  validate_cluster_config(c, cluster_file.empty() ? "paper cluster with overrides" : cluster_file);
  find_model(c.model);  // an unknown model is refused with the known names before anything runs
  return c;
}

void add_sim_flags(CLI::App* cmd, sim_flags& f) {
  cmd->add_flag("--ep-lockstep", f.ep_lockstep,
                "The prefill engines of a node run each pass together and wait for the slowest (EP all-to-all)");
  cmd->add_flag("--stale-view", f.stale_view,
                "Leader reports replace the scheduler's charges (the view before schedule/fresh_view), to compare");
  cmd->add_option("--write-back", f.write_back,
                  "snic: decode write-back leaves through the node's SNIC at its rate; free: costs nothing")
      ->capture_default_str();
}

sim::sim_result simulate(const cluster_config& c, const sim_flags& f, const std::string& policy,
                         const workload_options& w, const std::string& label, bool quiet) {
  if (f.write_back != "snic" && f.write_back != "free")
    throw user_error("--write-back must be snic or free (got '" + f.write_back + "')");
  sim::sim_options o;
  o.config = c;
  o.policy = policy;
  o.ep_lockstep = f.ep_lockstep;
  o.fresh_view = !f.stale_view;
  o.writes = f.write_back == "snic" ? sim::write_back::snic : sim::write_back::free;
  for (auto& a : build_workload(w, false)) {
    sim::sim_agent s;
    s.agent = a.index;
    s.start_s = a.start_s;
    s.replay_tool_time = w.tool_time;
    if (a.mooncake) s.hash_ids = a.mooncake->hash_ids;
    s.turns = std::move(a.turns);
    o.agents.push_back(std::move(s));
  }
  const bool tty = isatty(fileno(stderr));
  if (!quiet) {
    o.on_progress = [label, tty](const sim::sim_progress& p) {
      const auto line = fmt::format("{:<12} turns {}/{}  simulated {:.0f} s  wall {:.1f} s", label, p.turns_done,
                                    p.turns_total, p.sim_s, p.wall_s);
      if (tty) fmt::print(stderr, "\r{}   ", line);
      else fmt::print(stderr, "{}\n", line);
    };
  }
  auto r = sim::run_sim(o);
  if (!quiet) {
    if (tty) fmt::print(stderr, "\n");
    fmt::print(stderr, "{}: {:.0f} simulated s in {:.2f} wall s, {:.2f}M events/s, {} decisions\n", label,
               r.counters.sim_s, r.counters.wall_s,
               r.counters.wall_s > 0 ? double(r.counters.events) / r.counters.wall_s / 1e6 : 0.0, r.counters.decisions);
    for (const auto& m : r.role_switches)
      fmt::print(stderr, "{}: node {} to {} at {:.1f} s (drained {:.1f} s, serving {:.1f} s): {}\n", label, m.node,
                 m.to_prefill ? "prefill" : "decode", m.decided_s, m.drained_s, m.done_s, m.why);
  }
  return r;
}

}  // namespace dualpath::cli
