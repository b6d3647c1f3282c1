#include "cluster/cluster.hpp"
#include "protocol/errors.hpp"
#include "protocol/waits.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include "cluster/calibration.hpp"
#include "cluster/embedded.hpp"
#include "cluster/control_client.hpp"
#include "cluster/role_switch.hpp"
#include "cluster/turn_collector.hpp"
#include "observe/metrics.hpp"
#include "cluster/node_processes.hpp"
#include "observe/ui_page.hpp"
#include "actors/engines.hpp"
#include "cluster/node_host.hpp"
#include "cluster/verify.hpp"
#include "protocol/runtime_codec.hpp"
#include "protocol/system_config.hpp"
#include "core/cost_model.hpp"
#include "core/pass_timeline.hpp"
#include "core/secret.hpp"
#include "core/status.hpp"
#include "core/stop_signals.hpp"
#include "report/working_set.hpp"
#include "schedule/calibration.hpp"
#include "storage/block_store.hpp"
#include "storage/read_rate.hpp"

namespace dualpath::cluster {

// The cluster's secret for the registry and the control port (docs/design.md §13): the cluster file's, else
// DUALPATH_SECRET, else one generated for this run, which only the node processes this launcher starts can
// know; nodes started by hand and `dualpath ctl` need a given one.
std::string launch_secret(const cluster_config& c, bool processes, const std::string& node_registry,
                          bool control_port) {
  if (!processes && !control_port) return "";
  std::string secret = given_secret(c.secret);
  if (!secret.empty()) return secret;
  if (!node_registry.empty() || control_port)
    throw user_error(
        fmt::format("{} needs the cluster's secret, to give to the {} too: set [runtime] secret in the "
                    "cluster file or {}",
                    node_registry.empty() ? "--control-port" : "--node-registry",
                    node_registry.empty() ? "`dualpath ctl` commands" : "nodes you start", secret_env));
  return generate_secret();
}

void check_processes(const cluster_config& c, const run_mode& mode, const std::string& node_program,
                     const std::string& node_registry) {
  if (mode.bypass())
    throw user_error("the oracle policy copies KV with memcpy inside one process; run it without --processes");
  // docs/design.md §7.6: the EP lockstep's group actor and its engines share one process.
  if (c.ep_sync)
    throw user_error(
        "cluster.ep_sync runs a PE group's engines in lockstep inside one process; run it without "
        "--processes");
  if (node_program.empty() && node_registry.empty())
    throw user_error("a multi-process run needs the dualpath executable or a node registry address");
}

run_summary run_cluster(const run_options& o) {
  const run_mode mode = run_mode_of(o.policy);
  const auto& c = o.config;
  if (o.processes) check_processes(c, mode, o.node_program, o.node_registry);
  const std::string secret = launch_secret(c, o.processes, o.node_registry, o.control_port.has_value());
  auto refused = std::make_shared<refused_peers>();
  const run_base base = prepare_run(c, "cluster configuration", true);
  std::vector<std::unique_ptr<runtime::node_io>> ios;  // node processes build their own
  if (!o.processes) ios = embedded_data_planes(base, c, mode);
  // Destroyed before `ios`: every node's transfers stop before any node's memory is freed (runtime/node_io.hpp).
  const on_exit stop_nodes_first{[&] {
    for (auto& io : ios) io->stop();
  }};

  run_summary summary;
  summary.policy = o.policy;
  summary.prefill_nodes = c.prefill_nodes;
  std::vector<turn_record> records;
  turns_to_verify to_verify;
  std::string stall;                                       // why the run stopped making progress, if it did
  int64_t t0 = 0;                                          // the run's start
  std::vector<std::vector<runtime::snic_sample>> samples;  // per node
  std::vector<std::shared_ptr<runtime::ep_rounds>> ep;     // per prefill node, under ep_sync
  std::vector<engine_load_sample> engine_samples;          // the scheduler's view of every engine, per report
  auto count = [&](uint64_t snic_bytes, uint64_t persisted, uint64_t store_read, uint64_t snic_write,
                   uint64_t persist_errors) {
    summary.snic_bytes.push_back(snic_bytes);
    summary.persisted_blocks += persisted;
    summary.unpersisted_blocks += persist_errors;
    summary.store_read_bytes += store_read;
    summary.snic_write_bytes.push_back(snic_write);
  };
  {
    system_config cfg;
    caf::actor_system sys{cfg};
    auto view = make_view(base, c, mode, o.processes);
    scheduler_options sched;
    sched.policy = mode.scheduler_policy;
    mean_turn turn;
    for (const auto& script : o.scripts)
      for (const auto& t : script.turns) turn.add(t);
    sched.params = scheduler_params(base, c, turn, mode);
    for (const auto& s : c.switches) sched.switches.push_back({s.at_s, s.policy});
    sched.charge_expiry_s = 4 * c.timeout_s;  // a request unanswered by then has failed (docs/design.md §7.1)
    view->scheduler = spawn_scheduler(sys, sched);
    if (o.control_port) {
      const uint16_t port =
          publish_control(sys, view->scheduler, *o.control_port, o.control_host,
                          {secret_proof(secret, secret_purpose::control), refused, waits_of(c).request()});
      if (o.on_control_port) o.on_control_port(port);
    }
    // The page switches the policy through the scheduler until this block ends, before the actor system does.
    auto ui_link = o.ui ? o.ui->begin_run(o.config, o.policy, turns_total(o.scripts),
                                          scheduler_policy_setter(sys, view->scheduler))
                        : ui_page::attachment{};

    std::vector<caf::actor> all{caf::actor_cast<caf::actor>(view->scheduler)};  // to stop at the end
    std::vector<node_actors> node_set;  // embedded nodes' actors (a role switch replaces a node's)
    caf::scoped_actor self{sys};
    for (const auto& script : o.scripts) {
      view->clients.push_back(spawn_agent_client(sys, view, script, caf::actor_cast<caf::actor>(self)));
      all.push_back(caf::actor_cast<caf::actor>(view->clients.back()));
    }
    auto stop_all = [&] {
      for (auto& a : all) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    };
    std::unique_ptr<node_processes> nodes;
    // Whatever ends this block, early by an exception too, every actor is told to stop first: the actor
    // system's destructor below waits for all of them, and nothing may hang (docs/design.md §16).
    const on_exit stop_guard{[&] {
      nodes.reset();
      stop_all();
    }};
    if (o.processes) {
      try {
        nodes = std::make_unique<node_processes>(
            sys, *view, node_launch{o.node_program, o.node_registry, o.on_registry, secret, refused});
      } catch (...) {
        stop_all();
        throw;
      }
      if (o.on_nodes_started) o.on_nodes_started(nodes->pids());
    } else {
      spawn_embedded_nodes(sys, base, view, ios, ep, all, &node_set);
    }
    std::optional<role_switcher> switcher;  // adaptive P/D (docs/design.md §7.9)
    if (c.adaptive)
      switcher.emplace(role_switch_parts{
          view, nodes ? process_role_hosts(*nodes, view) : embedded_role_hosts(sys, base, view, ios, node_set, all),
          double(sched.params.beta_tokens) / c.beta_s});

    turn_collector collector{o, *view, nodes.get()};
    collector.ios = &ios;
    collector.switcher = switcher ? &*switcher : nullptr;
    pass_timeline::process_log().take();  // an earlier run's passes (--compare runs policies in turn)
    collector.run(self);
    summary.passes = pass_timeline::summarize(pass_timeline::process_log().take());
    records = std::move(collector.records);
    engine_samples = std::move(collector.engine_samples);
    to_verify = std::move(collector.to_verify);
    stall = collector.stall;
    t0 = collector.t0;
    summary.lost_nodes = collector.lost_total;
    summary.rejoined_nodes = collector.rejoined;
    summary.migrated_turns = collector.migrated;
    summary.retried_turns = collector.retried;
    if (switcher) {
      summary.adaptive = true;
      summary.role_switches = switcher->switches();
      summary.final_prefill_nodes = switcher->prefill_nodes();
    }
    if (nodes && stall.empty()) stall = nodes->check().message();  // a dead node cannot report its counters
    if (nodes && stall.empty()) {
      auto stats = nodes->stats();
      if (stats) {
        for (auto& s : *stats) {
          count(s.snic_bytes, s.persisted_blocks, s.store_read_bytes, s.snic_write_bytes, s.persist_errors);
          samples.push_back(std::move(s.snic_samples));
        }
        stall = nodes->stop().message();
      } else {
        stall = stats.error().message();
      }
    }
    nodes.reset();  // ends node processes still running
    stop_all();
  }                    // the actor system waits here for every actor to stop
  if (!stall.empty())  // a stop by signal says so in `stall` itself
    throw user_error((stop_requested() ? "run: " : o.processes ? "run failed: " : "run stalled: ") + stall);
  summary.refused_joins = refused->joins.load();
  summary.refused_commands = refused->commands.load();

  for (auto& io : ios) {
    const auto s = io->stats();
    count(s.snic_bytes, s.persisted_blocks, s.store_read_bytes, s.snic_write_bytes, s.persist_errors);
    samples.push_back(io->snic_samples());
  }
  summarize_turns(summary, records);
  std::vector<std::vector<snic_series_sample>> series;  // on the run's clock
  for (const auto& node : samples) {
    auto& out = series.emplace_back();
    for (const auto& x : node) out.push_back({double(x.t_ns - t0) / 1e9, x.read_bytes, x.read_q});
  }
  summary.snic_time = snic_windows(series, summary.jct_s, o.series_window_s);
  summary.load_time = load_windows(engine_samples, records, summary.jct_s, o.series_window_s);
  if (c.ep_sync) {
    std::vector<ep_round_point> points;
    for (uint32_t g = 0; g < ep.size(); ++g)
      for (const auto& r : ep[g]->records())
        points.push_back({double(r.start_ns - t0) / 1e9, g, r.members, r.max_over_avg()});
    summary.ep = make_ep_round_series(std::move(points));
  }
  set_working_set(summary, records, uint64_t(base.geometry.layers) * base.geometry.bytes_per_token_layer);
  const auto fit = base.first->fit();
  set_jct_bound(
      summary, records,
      {c.snic_gb_per_s, c.total_nodes(), c.prefill_nodes * c.engines_per_node, base.geometry.block_tokens,
       [&](uint64_t cached, uint64_t tokens) { return fit.seconds(prefill_flops(base.spec, cached, tokens)); }});
  // Verification after the run, so it does not slow the measured cluster.
  const auto v = verify_turns(to_verify, base.first, base.backend_options);
  summary.verified_turns = v.verified;
  summary.mismatched_turns = v.mismatched;
  return summary;
}

}  // namespace dualpath::cluster
