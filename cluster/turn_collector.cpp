// The turn collector (cluster/turn_collector.hpp).
#include "cluster/turn_collector.hpp"

#include "core/progress.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "actors/engines.hpp"
#include "cluster/node_events.hpp"
#include "cluster/node_role.hpp"
#include "observe/metrics.hpp"
#include "core/stop_signals.hpp"
#include "protocol/errors.hpp"
#include "protocol/runtime_codec.hpp"
#include "protocol/waits.hpp"

namespace dualpath::cluster {

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
  t.handoff = at(r.times.handoff);
  t.in_hbm = at(r.times.in_hbm);
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

}  // namespace

void turn_collector::run(caf::scoped_actor& self) {
  progress.agents_total = uint32_t(options.scripts.size());
  progress.turns_total = turns_total(options.scripts);
  t0 = now_ns();
  if (switcher) switcher->begin(t0);
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
      if (switcher && stall.empty()) switcher->tick(self, records);
    }
    if (seconds_between(last_report, now_ns()) >= report_every_s()) {
      last_report = now_ns();
      report(self);
    }
  }
  report(self);
}

double turn_collector::report_every_s() const {
  return std::min(options.progress_every_s, options.series_window_s / 2);
}

void turn_collector::report(caf::scoped_actor& self) {
  std::optional<scheduler_counters> stats;
  self->request(view.scheduler, std::chrono::milliseconds(200), atom::stats_v)
      .receive([&](const envelope<schema::SchedulerStats>& e) { stats = decode(e); }, [](caf::error&) {});
  if (stats) {
    const double t = seconds_between(t0, now_ns());
    // The engines' load as the scheduler sees it moves while any engine (of any process) works.
    uint64_t view_fingerprint = stats->assigned * 0x9e3779b97f4a7c15ull;
    for (const auto& n : stats->nodes)
      for (const auto& e : n.node.engines) {
        engine_samples.push_back({t, e.engine, n.node.kind == schedule::role::prefill, e.tok, e.seq});
        view_fingerprint = (view_fingerprint ^ (e.tok + (uint64_t(e.seq) << 40))) * 0x100000001b3ull;
      }
    note_progress(last_view_fingerprint, view_fingerprint);
  }
  if (options.on_progress) {
    progress.elapsed_s = seconds_between(t0, now_ns());
    const uint32_t nodes = view.config.prefill_nodes + view.config.decode_nodes;
    progress.in_flight_by_node.assign(nodes, 0);
    progress.engine_requests_by_node.assign(nodes, 0);
    progress.prefill_by_node.assign(nodes, 0);
    if (stats)
      for (const auto& n : stats->nodes) {
        if (n.node.node >= nodes) continue;
        progress.in_flight_by_node[n.node.node] = n.in_flight;
        progress.prefill_by_node[n.node.node] = n.node.kind == schedule::role::prefill;
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

void turn_collector::sample_metrics(const std::optional<scheduler_counters>& stats,
                                    const std::vector<ui_page::snic_sample>& snics) {
  for (size_t n = 0; n < snics.size(); ++n)
    options.metrics->set_snic(uint32_t(n), snics[n].read_bytes, snics[n].read_q);
  if (!stats) return;
  options.metrics->set_waiting(stats->waiting);
  options.metrics->set_policy(stats->policy);
  for (const auto& n : stats->nodes)
    for (const auto& e : n.node.engines)
      options.metrics->set_engine(e.engine, n.node.kind == schedule::role::prefill ? "prefill" : "decode", e.tok, e.seq,
                                  e.free_hbm);
}

void turn_collector::start_clients() {
  for (size_t a = 0; a < options.scripts.size(); ++a) {
    const double start_s = options.scripts[a].start_s;
    const auto delay = std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(start_s));
    if (start_s > 0) caf::delayed_anon_send(view.clients[a], delay, atom::start_v);
    else caf::anon_send(view.clients[a], atom::start_v);
  }
}

void turn_collector::on_result(const turn_result& r, const turn_payload& payload, int64_t t0) {
  records.push_back(record_of(r, t0, view.geometry.block_tokens));
  if (switcher) switcher->on_result(r.request);
  if (options.metrics) options.metrics->observe_turn(records.back(), view.geometry.block_tokens);
  if (options.ui) options.ui->observe_turn(records.back());
  if (r.error.empty() && !payload.tokens.empty()) to_verify.emplace_back(payload.tokens, r.generated);
  ++progress.turns_done;
}

void turn_collector::check_stall(caf::scoped_actor& self) {
  if (nodes)
    for (auto& [n, how] : nodes->poll_lost())
      if (stall.empty()) on_lost(self, n, how);
  if (nodes && stall.empty())
    for (uint32_t n : nodes->poll_rejoined()) on_rejoined(self, n);
  if (stall.empty() && stop_requested()) stall = fmt::format("stopped by signal {}", stop_requested());
  note_progress(last_fingerprint, work_fingerprint());
  if (stall.empty() && seconds_between(last_event, now_ns()) > view.config.timeout_s)
    stall = fmt::format(
        "no progress for {:g} s: no turn finished, no layer computed, no KV read and no engine's "
        "load changed ({} of {} turns done{})",
        view.config.timeout_s, progress.turns_done, progress.turns_total, waiting_hint(self, view));
}

// Layers and decode steps of this process's engines and bytes through its SNICs (embedded nodes; node
// processes are judged by what the scheduler's view shows of them, report()).
uint64_t turn_collector::work_fingerprint() const {
  uint64_t f = progress::work_units().load(std::memory_order_relaxed);
  if (ios)
    for (const auto& io : *ios) f += io->stats().snic_bytes;
  return f;
}

void turn_collector::note_progress(uint64_t& last, uint64_t fingerprint) {
  if (fingerprint == last) return;
  last = fingerprint;
  last_event = std::max(last_event, now_ns());
}

void turn_collector::on_lost(caf::scoped_actor& self, uint32_t node, const std::string& how) {
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
  stall = without_nodes(view, lost);
  if (!stall.empty()) return;
  if (auto s = tell_lost(self, view, node, uint32_t(lost_total)); !s) stall = s.message();
}

void turn_collector::on_rejoined(caf::scoped_actor& self, uint32_t node) {
  lost.erase(std::remove_if(lost.begin(), lost.end(), [&](const auto& l) { return l.first == node; }), lost.end());
  ++rejoined;
  reset_role(view, node);  // its new process serves in the cluster file's role (§7.9)
  if (auto s = tell_rejoined(self, view, node); !s) stall = s.message();
  spdlog::info("launcher: node {} rejoined the run", node);
  if (options.metrics) options.metrics->count_rejoined_node();
  if (options.on_node_rejoined) options.on_node_rejoined(node);
}

}  // namespace dualpath::cluster
