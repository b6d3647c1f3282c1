#include "cluster/cluster.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "cluster/control_client.hpp"
#include "cluster/metrics.hpp"
#include "cluster/node_processes.hpp"
#include "cluster/ui_page.hpp"
#include "actors/engines.hpp"
#include "cluster/node_host.hpp"
#include "cluster/verify.hpp"
#include "protocol/runtime_codec.hpp"
#include "protocol/system_config.hpp"
#include "core/cost_model.hpp"
#include "core/secret.hpp"
#include "core/status.hpp"
#include "core/stop_signals.hpp"
#include "report/working_set.hpp"
#include "schedule/calibration.hpp"
#include "storage/block_store.hpp"
#include "storage/read_rate.hpp"

namespace dualpath::actors {

namespace {

double seconds_between(int64_t a, int64_t b) { return a && b ? double(b - a) / 1e9 : 0; }

// A runtime turn as the report's record: monotonic nanosecond stamps (0 = never reached) made relative to t0.
turn_record record_of(const turn_result& r, int64_t t0, uint32_t block_tokens) {
  const auto at = [t0](int64_t ns) { return ns ? std::optional<double>(double(ns - t0) / 1e9) : std::nullopt; };
  turn_facts f;
  f.agent = r.agent;
  f.turn = r.turn;
  f.error = r.error;
  f.path = r.path;
  f.hit_blocks = r.valid_hit_blocks;
  f.block_tokens = block_tokens;
  f.prompt_tokens = r.prompt_tokens;
  f.generated_tokens = uint32_t(r.generated.size());
  f.corrupt_blocks = r.corrupt_blocks;
  f.kv_verified = r.kv_verified;
  f.kv_corrupt = r.kv_corrupt;
  turn_stamps t;
  t.submitted = at(r.times.submitted);
  t.assigned = at(r.times.assigned);
  t.kv_ready = at(r.times.kv_ready);
  t.prefill_start = at(r.times.prefill_start);
  t.first_token = at(r.times.first_token);
  t.second_token = at(r.times.second_token);
  t.last_token = at(r.times.last_token);
  t.done = at(r.times.done ? r.times.done : now_ns());
  return make_turn_record(f, t);
}

// Why a stalled run may be stuck: requests the scheduler cannot place (asked with a short deadline).
std::string waiting_hint(caf::scoped_actor& self, const cluster_view& view) {
  std::string hint;
  self->request(view.scheduler, std::chrono::seconds(1), atom::stats_v)
      .receive(
          [&](const envelope<schema::SchedulerStats>& e) {
            const auto s = decode(e);
            if (s.waiting > 0) hint = fmt::format("; {} requests wait in the scheduler's queue", s.waiting);
          },
          [](caf::error&) {});
  return hint;
}

// The SNIC rate α stands for (docs/design.md §7.1): the cap, or, uncapped, the store's read rate measured now
// with a few real block reads. The oracle reads no file, so it keeps the 2 GB/s default (α orders nothing
// there: its read queues stay empty).
double snic_rate(const run_base& base, const cluster_config& c, const run_mode& mode) {
  if (c.snic_gb_per_s > 0) return c.snic_gb_per_s * 1e9;
  const double fallback = schedule::calibration_input{}.snic_bytes_per_s;
  if (mode.bypass()) return fallback;
  const auto r = storage::measure_read_rate(*base.store);
  if (!r.ok()) {
    spdlog::warn("scheduler: store read rate not measured ({}); alpha assumes {:.2f} GB/s", r.error().message(),
                 fallback / 1e9);
    return fallback;
  }
  spdlog::info("scheduler: uncapped SNIC, store read rate {:.2f} GB/s ({} blocks, {} bytes in {:.1f} ms)",
               r.value().bytes_per_s / 1e9, r.value().blocks, r.value().bytes, r.value().seconds * 1e3);
  return r.value().bytes_per_s;
}

// α and β from the hardware and the compute fit (docs/design.md §7.2), unless the cluster file sets them.
// β is calibrated at the workload's own mean turn (its hit context and append), since attention time grows
// with the context; a workload without turns falls back to four cached blocks and one appended.
schedule::policy_params scheduler_params(const run_base& base, const cluster_config& c, const mean_turn& turn,
                                         const run_mode& mode) {
  const auto fit = base.first->fit();
  const auto& geo = base.geometry;
  schedule::calibration_input in;
  in.model = base.spec;
  in.fit = {fit.fixed_s, fit.seconds_per_flop};
  in.kv_bytes_per_token = geo.layers * geo.bytes_per_token_layer;
  in.block_tokens = geo.block_tokens;
  in.snic_bytes_per_s = snic_rate(base, c, mode);
  in.alpha_s = c.alpha_s;
  in.beta_s = c.beta_s;
  in.alpha_tokens = c.alpha_tokens;
  in.beta_tokens = c.beta_tokens;
  in.z_slack = c.z_slack;
  in.turn = turn;
  const auto cal = schedule::calibrate(in);
  spdlog::info("scheduler: alpha {} tokens at {:.3g} GB/s, beta {} tokens (at a mean turn of {} cached + {} appended "
               "tokens)", cal.params.alpha_tokens, in.snic_bytes_per_s / 1e9, cal.params.beta_tokens, cal.cached,
               cal.append);
  auto params = cal.params;
  // The groups of docs/design.md §7.2/§7.3: decode node ids start after the prefill nodes (§3).
  params.groups = {c.pe_group_nodes, c.de_group_nodes, c.prefill_nodes};
  return params;
}

// The embedded cluster's node data planes, connected to each other. They are built before the actor system
// because they must outlive every actor that points at them.
std::vector<std::unique_ptr<runtime::node_io>> embedded_data_planes(const run_base& base, const cluster_config& c,
                                                                   const run_mode& mode) {
  std::vector<std::unique_ptr<runtime::node_io>> ios;
  // The oracle's hit KV, in DRAM and shared: a block one node persists is what another node loads.
  auto dram = mode.bypass() ? std::make_shared<runtime::dram_blocks>() : nullptr;
  // The nodes emulate separate hosts but share this process's cores: their provider calls go one at a
  // time (docs/design.md §13), so that no node spins on a lock another node's preempted thread holds.
  auto provider_lock = std::make_shared<std::mutex>();
  for (uint32_t n = 0; n < c.total_nodes(); ++n)
    ios.push_back(make_node_io(c, base.geometry, n, mode.bypass(), *base.store, dram, provider_lock));
  runtime::fabric_directory directory(c.total_nodes() * c.engines_per_node);
  for (auto& io : ios)
    for (auto& e : io->entries()) directory[e.engine] = e;
  for (auto& io : ios) io->connect(directory);
  return ios;
}

// Spawns every node's actors in this process; returns them (to stop at the end).
// `ep` gets each prefill node's EP rounds under ep_sync (read once the actor system has stopped).
// Every actor spawned is added to `all` at once, so that a throw half-way still leaves it to be stopped.
void spawn_embedded_nodes(caf::actor_system& sys, const run_base& base, const cluster_view_ptr& view,
                          std::vector<std::unique_ptr<runtime::node_io>>& ios,
                          std::vector<std::shared_ptr<runtime::ep_rounds>>& ep, std::vector<caf::actor>& all) {
  const auto& c = view->config;
  for (uint32_t n = 0; n < c.total_nodes(); ++n) {
    node_actors na = spawn_node_actors(sys, base, view, *ios[n], n, n == 0 ? base.first : nullptr);
    view->traffic_queues[n] = na.traffic_queue;
    view->leaders[n] = na.leader;
    if (na.ep_rounds) ep.push_back(na.ep_rounds);
    for (size_t i = 0; i < na.engines.size(); ++i) view->set_engine(uint32_t(n * c.engines_per_node + i), na.engines[i]);
    all.insert(all.end(), na.all.begin(), na.all.end());
  }
  for (auto& l : view->leaders) caf::anon_send(l, atom::tick_v);
}

// The launcher's side of a run: takes every client's results until all agents finished, or says why the run
// stopped making progress.
struct turn_collector {
  turn_collector(const run_options& o, const cluster_view& v, node_processes* n) : options(o), view(v), nodes(n) {}

  const run_options& options;
  const cluster_view& view;
  node_processes* nodes = nullptr;  // multi-process runs: nodes can be lost (docs/design.md §13)
  std::vector<std::pair<uint32_t, std::string>> lost;  // nodes lost now, and how, in the order noticed
  uint64_t lost_total = 0, rejoined = 0;                // losses and rejoins over the run
  uint64_t migrated = 0;                                // turns re-run because of them
  uint64_t retried = 0;                                 // turns re-run after a transient fault
  int64_t last_event = 0;  // the latest answered turn (or, after a loss, the moment the loss's waits end)
  std::vector<turn_record> records;
  turns_to_verify to_verify;
  run_progress progress;
  std::vector<engine_load_sample> engine_samples;  // every report's engine loads, for load_over_time
  std::string stall;
  int64_t t0 = 0;  // the run's start: just before the clients are started
  const std::vector<std::unique_ptr<runtime::node_io>>* ios = nullptr;  // embedded runs: the SNICs to sample

  void run(caf::scoped_actor& self) {
    progress.agents_total = uint32_t(options.scripts.size());
    for (const auto& s : options.scripts) progress.turns_total += s.turns.size();
    t0 = now_ns();
    start_clients();
    int64_t last_report = t0;
    last_event = t0;
    int64_t last_check = t0;
    while (progress.agents_done < progress.agents_total && stall.empty()) {
      self->receive(
          [&](atom::result, const envelope<schema::TurnResult>& e, const envelope<schema::TurnPayload>& p) {
            on_result(decode(e), decode(p), t0);
            last_event = std::max(last_event, now_ns());
          },
          [&](atom::finish, uint32_t) {
            ++progress.agents_done;
            last_event = std::max(last_event, now_ns());
          },
          [&](atom::lost, uint32_t) {
            ++migrated;
            if (options.metrics) options.metrics->count_rerun(true);
          },
          [&](atom::retry, uint32_t) {
            ++retried;
            if (options.metrics) options.metrics->count_rerun(false);
          },
          caf::after(std::chrono::milliseconds(200)) >> [] {});
      // Every 200 ms, busy or idle: a node that died is noticed even while the others keep answering.
      if (seconds_between(last_check, now_ns()) >= 0.2) {
        last_check = now_ns();
        check_stall(self);
      }
      if (seconds_between(last_report, now_ns()) >= report_every_s()) {
        last_report = now_ns();
        report(self);
      }
    }
    report(self);
  }

  // Reports come at least twice per series window, so every window holds samples of every engine.
  double report_every_s() const { return std::min(options.progress_every_s, options.series_window_s / 2); }

  // The scheduler's stats (asked with a short deadline) feed the progress report, the metrics and the
  // report's load_over_time.
  void report(caf::scoped_actor& self) {
    std::optional<scheduler_counters> stats;
    self->request(view.scheduler, std::chrono::milliseconds(200), atom::stats_v)
        .receive([&](const envelope<schema::SchedulerStats>& e) { stats = decode(e); }, [](caf::error&) {});
    if (stats) {
      const double t = seconds_between(t0, now_ns());
      for (const auto& n : stats->nodes)
        for (const auto& e : n.node.engines)
          engine_samples.push_back({t, e.engine, n.node.kind == schedule::role::prefill, e.tok, e.seq});
    }
    if (options.on_progress) {
      progress.elapsed_s = seconds_between(t0, now_ns());
      const uint32_t nodes = view.config.prefill_nodes + view.config.decode_nodes;
      progress.in_flight_by_node.assign(nodes, 0);
      progress.engine_requests_by_node.assign(nodes, 0);
      if (stats)
        for (const auto& n : stats->nodes) {
          if (n.node.node >= nodes) continue;
          progress.in_flight_by_node[n.node.node] = n.in_flight;
          for (const auto& e : n.node.engines) progress.engine_requests_by_node[n.node.node] += e.seq;
        }
      options.on_progress(progress);
    }
    if (!options.metrics && !options.ui) return;
    // Embedded runs: each node's SNIC, read once for both (a node process serves its own, cluster/node_process.cpp).
    std::vector<ui_page::snic_sample> snics;
    if (ios)
      for (const auto& io : *ios) snics.push_back({io->stats().snic_bytes, io->read_q()});
    if (options.metrics) sample_metrics(stats, snics);
    if (options.ui) options.ui->update(progress, seconds_between(t0, now_ns()), stats, snics);
  }

  // Each node's SNIC, the scheduler's queue and policy, and each engine's load.
  void sample_metrics(const std::optional<scheduler_counters>& stats, const std::vector<ui_page::snic_sample>& snics) {
    for (size_t n = 0; n < snics.size(); ++n) options.metrics->set_snic(uint32_t(n), snics[n].read_bytes, snics[n].read_q);
    if (!stats) return;
    options.metrics->set_waiting(stats->waiting);
    options.metrics->set_policy(stats->policy);
    for (const auto& n : stats->nodes)
      for (const auto& e : n.node.engines)
        options.metrics->set_engine(e.engine, n.node.kind == schedule::role::prefill ? "prefill" : "decode", e.tok,
                                    e.seq, e.free_hbm);
  }

  void start_clients() {
    for (size_t a = 0; a < options.scripts.size(); ++a) {
      const double start_s = options.scripts[a].start_s;
      const auto delay = std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(start_s));
      if (start_s > 0) caf::delayed_anon_send(view.clients[a], delay, atom::start_v);
      else caf::anon_send(view.clients[a], atom::start_v);
    }
  }

  void on_result(const turn_result& r, const turn_payload& payload, int64_t t0) {
    records.push_back(record_of(r, t0, view.geometry.block_tokens));
    if (options.metrics) options.metrics->observe_turn(records.back(), view.geometry.block_tokens);
    if (options.ui) options.ui->observe_turn(records.back());
    if (r.error.empty() && !payload.tokens.empty()) to_verify.emplace_back(payload.tokens, r.generated);
    ++progress.turns_done;
  }

  void check_stall(caf::scoped_actor& self) {
    if (nodes)
      for (auto& [n, how] : nodes->poll_lost())
        if (stall.empty()) on_lost(self, n, how);
    if (nodes && stall.empty())
      for (uint32_t n : nodes->poll_rejoined()) on_rejoined(self, n);
    if (stall.empty() && stop_requested()) stall = fmt::format("stopped by signal {}", stop_requested());
    if (stall.empty() && seconds_between(last_event, now_ns()) > view.config.timeout_s)
      stall = fmt::format("no turn finished for {:.0f} s ({} of {} turns done{})", view.config.timeout_s,
                          progress.turns_done, progress.turns_total, waiting_hint(self, view));
  }

  // docs/design.md §13: the scheduler drops the node and names its turns in flight; every client hears of
  // the loss (the named turns, and those that failed meanwhile, are re-run). With no prefill or no decode
  // node left the run ends, naming every lost node.
  // How long the launcher waits for the scheduler to drop or take back a node.
  caf::timespan scheduler_wait() const {
    return std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(view.config.timeout_s));
  }

  void on_lost(caf::scoped_actor& self, uint32_t node, const std::string& how) {
    spdlog::warn("launcher: {}; going on without node {}", how, node);
    lost.emplace_back(node, how);
    ++lost_total;
    if (options.metrics) options.metrics->count_lost_node();
    if (options.on_node_lost) options.on_node_lost(node, how);
    nodes->announce_lost(node);
    // Requests the survivors had sent to the lost node's actors are not failed by CAF when its host
    // vanishes: they time out, an engine's data-plane waits within 2 · timeout_s (actors/engine_base.hpp),
    // and a pass waiting on one holds its PE meanwhile. That silence does not count as a stall, twice over:
    // a turn re-run after such a wait can meet a second one (a chaos run once sat silent 34 s after losing
    // a decode node with timeout_s 10, then finished nothing more in the old 30 s bound).
    last_event = std::max(last_event, now_ns() + int64_t(4 * view.config.timeout_s * 1e9));
    const auto& c = view.config;
    uint32_t prefill_lost = 0;
    for (const auto& l : lost) prefill_lost += view.is_prefill_node(l.first) ? 1 : 0;
    const bool no_prefill = prefill_lost == c.prefill_nodes;
    const bool no_decode = lost.size() - prefill_lost == c.decode_nodes;
    if (no_prefill || no_decode) {
      std::string names;
      for (const auto& l : lost) names += (names.empty() ? "" : "; ") + l.second;
      stall = fmt::format("no {} engine remains (lost: {})", no_prefill ? "prefill" : "decode", names);
      return;
    }
    std::vector<uint64_t> turns;
    self->request(view.scheduler, scheduler_wait(), atom::lost_v, node)
        .receive([&](const std::vector<uint64_t>& t) { turns = t; },
                 [&](const caf::error& e) {
                   stall = "the scheduler did not drop node " + std::to_string(node) + ": " + caf::to_string(e);
                 });
    for (const auto& client : view.clients) caf::anon_send(client, atom::lost_v, uint32_t(lost_total), turns);
  }

  // docs/design.md §13: a lost node is back, already wired to every survivor; the scheduler counts its
  // engines again from its leader's next report.
  void on_rejoined(caf::scoped_actor& self, uint32_t node) {
    lost.erase(std::remove_if(lost.begin(), lost.end(), [&](const auto& l) { return l.first == node; }), lost.end());
    ++rejoined;
    self->request(view.scheduler, scheduler_wait(), atom::rejoin_v, node)
        .receive([](uint32_t) {},
                 [&](const caf::error& e) {
                   stall = "the scheduler did not take node " + std::to_string(node) + " back: " + caf::to_string(e);
                 });
    spdlog::info("launcher: node {} rejoined the run", node);
    if (options.metrics) options.metrics->count_rejoined_node();
    if (options.on_node_rejoined) options.on_node_rejoined(node);
  }
};

// The cluster's secret for the registry and the control port (docs/design.md §13): the cluster file's, else
// DUALPATH_SECRET, else one generated for this run, which only the node processes this launcher starts can
// know; nodes started by hand and `dualpath ctl` need a given one.
std::string run_secret(const run_options& o) {
  if (!o.processes && !o.control_port) return "";
  std::string secret = given_secret(o.config.secret);
  if (!secret.empty()) return secret;
  if (!o.node_registry.empty() || o.control_port)
    throw user_error(fmt::format("{} needs the cluster's secret, to give to the {} too: set [runtime] secret in the "
                                 "cluster file or {}", o.node_registry.empty() ? "--control-port" : "--node-registry",
                                 o.node_registry.empty() ? "`dualpath ctl` commands" : "nodes you start",
                                 secret_env));
  return generate_secret();
}

}  // namespace

run_summary run_cluster(const run_options& o) {
  const run_mode mode = run_mode_of(o.policy);
  const auto& c = o.config;
  if (o.processes && mode.bypass())
    throw user_error("the oracle policy copies KV with memcpy inside one process; run it without --processes");
  // docs/design.md §7.6: the EP lockstep's group actor and its engines share one process.
  if (o.processes && c.ep_sync)
    throw user_error("cluster.ep_sync runs a PE group's engines in lockstep inside one process; run it without "
                     "--processes");
  if (o.processes && o.node_program.empty() && o.node_registry.empty())
    throw user_error("a multi-process run needs the dualpath executable or a node registry address");
  const std::string secret = run_secret(o);
  auto refused = std::make_shared<refused_peers>();
  const run_base base = prepare_run(c, "cluster configuration");
  std::vector<std::unique_ptr<runtime::node_io>> ios;  // node processes build their own
  if (!o.processes) ios = embedded_data_planes(base, c, mode);

  run_summary summary;
  summary.policy = o.policy;
  std::vector<turn_record> records;
  turns_to_verify to_verify;
  std::string stall;  // why the run stopped making progress, if it did
  int64_t t0 = 0;     // the run's start
  std::vector<std::vector<runtime::snic_sample>> samples;  // per node
  std::vector<std::shared_ptr<runtime::ep_rounds>> ep;      // per prefill node, under ep_sync
  std::vector<engine_load_sample> engine_samples;           // the scheduler's view of every engine, per report
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
    auto view = make_view(base, c, mode);
    // A failed turn may be the first sign of a lost node: hold it past the launcher's detection (§13).
    if (o.processes) view->node_loss_grace_s = 3.0;
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
      const uint16_t port = publish_control(sys, view->scheduler, *o.control_port, o.control_host,
                                            {secret_proof(secret, secret_purpose::control), refused});
      if (o.on_control_port) o.on_control_port(port);
    }
    // The page switches the policy through the scheduler until this block ends, before the actor system does.
    auto ui_link = o.ui ? o.ui->begin_run(o, scheduler_policy_setter(sys, view->scheduler))
                        : ui_page::attachment{};

    std::vector<caf::actor> all{caf::actor_cast<caf::actor>(view->scheduler)};  // to stop at the end
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
    struct stop_on_exit {
      std::function<void()> f;
      ~stop_on_exit() { f(); }
    } stop_guard{[&] {
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
      spawn_embedded_nodes(sys, base, view, ios, ep, all);
    }

    turn_collector collector{o, *view, nodes.get()};
    collector.ios = &ios;
    collector.run(self);
    records = std::move(collector.records);
    engine_samples = std::move(collector.engine_samples);
    to_verify = std::move(collector.to_verify);
    stall = collector.stall;
    t0 = collector.t0;
    summary.lost_nodes = collector.lost_total;
    summary.rejoined_nodes = collector.rejoined;
    summary.migrated_turns = collector.migrated;
    summary.retried_turns = collector.retried;
    if (nodes && stall.empty()) stall = nodes->check().message();  // a dead node cannot report its counters
    if (nodes && stall.empty()) {
      try {
        for (auto& s : nodes->stats()) {
          count(s.snic_bytes, s.persisted_blocks, s.store_read_bytes, s.snic_write_bytes, s.persist_errors);
          samples.push_back(std::move(s.snic_samples));
        }
        nodes->stop();
      } catch (const user_error& e) {
        stall = e.what();
      }
    }
    nodes.reset();  // ends node processes still running
    stop_all();
  }  // the actor system waits here for every actor to stop
  if (stop_requested()) throw user_error("run: " + stall);
  if (!stall.empty()) throw user_error((o.processes ? "run failed: " : "run stalled: ") + stall);
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
  set_jct_bound(summary, records,
                {c.snic_gb_per_s, c.total_nodes(), c.prefill_nodes * c.engines_per_node, base.geometry.block_tokens,
                 [&](uint64_t cached, uint64_t tokens) { return fit.seconds(prefill_flops(base.spec, cached, tokens)); }});
  // Verification after the run, so it does not slow the measured cluster.
  const auto v = verify_turns(to_verify, base.first, base.backend_options);
  summary.verified_turns = v.verified;
  summary.mismatched_turns = v.mismatched;
  return summary;
}

}  // namespace dualpath::actors
