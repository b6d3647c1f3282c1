#include "actors/cluster.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "actors/control.hpp"
#include "actors/deployment.hpp"
#include "actors/engines.hpp"
#include "actors/node_host.hpp"
#include "actors/runtime_messages.hpp"
#include "actors/system_config.hpp"
#include "core/cost_model.hpp"
#include "core/errors.hpp"
#include "schedule/calibration.hpp"
#include "storage/block_store.hpp"

namespace dualpath::actors {

const std::vector<std::string>& run_policy_names() {
  static const std::vector<std::string> names{"basic", "layerwise", "dualpath", "round_robin", "split", "oracle"};
  return names;
}

void check_run_policy(const std::string& name) {
  const auto& names = run_policy_names();
  if (std::find(names.begin(), names.end(), name) != names.end()) return;
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  throw user_error("unknown policy '" + name + "' (known: " + known + ")");
}

namespace {

std::string scheduler_policy_for(const std::string& run_policy) {
  if (run_policy == "basic" || run_policy == "layerwise" || run_policy == "oracle") return "basic";
  return run_policy;
}

double seconds_between(int64_t a, int64_t b) { return a && b ? double(b - a) / 1e9 : 0; }

turn_record record_of(const turn_result& r, int64_t t0) {
  turn_record rec;
  rec.agent = r.agent;
  rec.turn = r.turn;
  rec.error = r.error;
  rec.ttft_s = seconds_between(r.times.submitted, r.times.first_token);
  rec.has_ttst = r.times.second_token != 0;
  rec.ttst_s = seconds_between(r.times.first_token, r.times.second_token);
  if (r.times.second_token && r.generated.size() > 2) {
    rec.has_tpot = true;
    rec.tpot_s = seconds_between(r.times.second_token, r.times.done) / double(r.generated.size() - 2);
  }
  rec.queue_s = seconds_between(r.times.submitted, r.times.assigned);
  rec.kv_read_s = seconds_between(r.times.assigned, r.times.kv_ready);
  rec.assign_s = seconds_between(r.times.kv_ready, r.times.prefill_start);
  rec.prefill_s = seconds_between(r.times.prefill_start, r.times.first_token);
  rec.path = r.path;
  rec.hit_blocks = r.valid_hit_blocks;
  rec.prompt_tokens = r.prompt_tokens;
  rec.corrupt_blocks = r.corrupt_blocks;
  rec.kv_verified = r.kv_verified;
  rec.kv_corrupt = r.kv_corrupt;
  rec.done_s = seconds_between(t0, r.times.done ? r.times.done : now_ns());
  return rec;
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

std::vector<int32_t> recompute_turn(gpu::compute_backend& backend, const std::vector<int32_t>& prompt, uint32_t gen) {
  const auto& m = backend.model();
  const uint64_t bytes = m.kv_bytes_per_token_layer;
  std::vector<std::vector<std::byte>> kv(m.layers, std::vector<std::byte>(prompt.size() * bytes));
  gpu::prefill_item item;
  item.cached = 0;
  item.tokens = prompt;
  item.emit_token = true;
  auto pass = backend.begin_prefill({item});
  for (uint32_t l = 0; l < m.layers; ++l) pass->run_layer(l, {{}}, {kv[l].data()});
  std::vector<int32_t> out{pass->finish().at(0)};
  std::vector<std::byte> fresh(m.layers * bytes);
  while (out.size() < gen) {
    std::vector<gpu::decode_item> items(1);
    auto& d = items[0];
    d.token = out.back();
    d.position = uint32_t(kv[0].size() / bytes);
    for (uint32_t l = 0; l < m.layers; ++l) d.kv.push_back({{kv[l].data(), d.position}});
    d.new_kv = fresh.data();
    out.push_back(backend.decode_step(items).at(0));
    for (uint32_t l = 0; l < m.layers; ++l) kv[l].insert(kv[l].end(), fresh.begin() + l * bytes, fresh.begin() + (l + 1) * bytes);
  }
  return out;
}

run_summary run_cluster(const run_options& o) {
  check_run_policy(o.policy);
  const auto& c = o.config;
  const std::string origin = "cluster configuration";
  if (o.processes && o.policy == "oracle")
    throw user_error("the oracle policy copies KV with memcpy inside one process; run it without --processes");
  if (o.processes && o.node_program.empty() && o.node_registry.empty())
    throw user_error("a multi-process run needs the dualpath executable or a node registry address");
  run_base base = prepare_run(c, origin);
  const model_spec& spec = base.spec;
  const runtime::kv_geometry& geo = base.geometry;
  const std::shared_ptr<gpu::compute_backend>& first = base.first;

  // Node data planes of the embedded cluster (before the actor system: they must outlive every actor that
  // points at them). Node processes build their own.
  std::vector<std::unique_ptr<runtime::node_io>> ios;
  if (!o.processes) {
    for (uint32_t n = 0; n < c.total_nodes(); ++n) ios.push_back(make_node_io(c, geo, n, o.policy == "oracle", *base.store));
    runtime::fabric_directory directory(c.total_nodes() * c.engines_per_node);
    for (auto& io : ios)
      for (auto& e : io->entries()) directory[e.engine] = e;
    for (auto& io : ios) io->connect(directory);
  }

  // α and β from the hardware and the compute fit (DESIGN §7.2).
  const auto fit = first->fit();
  schedule::flops_fit sfit{fit.fixed_s, fit.seconds_per_flop};
  const double snic_rate = c.snic_gb_per_s > 0 ? c.snic_gb_per_s * 1e9 : 2e9;
  schedule::policy_params params;
  params.kv_bytes_per_token = geo.layers * geo.bytes_per_token_layer;
  params.alpha_tokens = schedule::alpha_tokens(snic_rate, params.kv_bytes_per_token, c.alpha_s);
  params.beta_tokens =
      schedule::beta_tokens(schedule::prefill_tokens_per_s(spec, sfit, 4 * geo.block_tokens, geo.block_tokens), c.beta_s);
  if (c.alpha_tokens) params.alpha_tokens = c.alpha_tokens;
  if (c.beta_tokens) params.beta_tokens = c.beta_tokens;
  params.z_slack = c.z_slack;

  run_summary summary;
  summary.policy = o.policy;
  std::vector<turn_record> records;
  std::string stall;  // why the run stopped making progress, if it did
  std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> to_verify;  // prompt, generated
  {
    system_config cfg;
    caf::actor_system sys{cfg};
    auto view = make_view(base, c, o.policy);

    scheduler_options sched;
    sched.policy = scheduler_policy_for(o.policy);
    sched.params = params;
    for (const auto& s : c.switches) sched.switches.push_back({s.at_s, s.policy});
    view->scheduler = spawn_scheduler(sys, sched);
    if (o.control_port) {
      const uint16_t port = publish_control(sys, view->scheduler, *o.control_port);
      if (o.on_control_port) o.on_control_port(port);
    }

    std::vector<caf::actor> all;  // every actor of this process to stop at the end
    all.push_back(caf::actor_cast<caf::actor>(view->scheduler));
    caf::scoped_actor self{sys};
    for (const auto& script : o.scripts) {
      view->clients.push_back(spawn_agent_client(sys, view, script, caf::actor_cast<caf::actor>(self)));
      all.push_back(caf::actor_cast<caf::actor>(view->clients.back()));
    }
    auto stop_all = [&] {
      for (auto& a : all) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    };
    std::unique_ptr<node_processes> nodes;
    if (o.processes) {
      try {
        nodes = std::make_unique<node_processes>(sys, *view, node_launch{o.node_program, o.node_registry, o.on_registry});
      } catch (...) {
        stop_all();
        throw;
      }
      if (o.on_nodes_started) o.on_nodes_started(nodes->pids());
    } else {
      for (uint32_t n = 0; n < c.total_nodes(); ++n) {
        node_actors na = spawn_node_actors(sys, base, view, *ios[n], n, n == 0 ? first : nullptr);
        view->traffic_queues[n] = na.traffic_queue;
        view->leaders[n] = na.leader;
        for (size_t i = 0; i < na.engines.size(); ++i) view->engines[n * c.engines_per_node + i] = na.engines[i];
        all.insert(all.end(), na.all.begin(), na.all.end());
      }
      for (auto& l : view->leaders) caf::anon_send(l, atom::tick_v);
    }

    run_progress progress;
    progress.agents_total = uint32_t(o.scripts.size());
    for (const auto& s : o.scripts) progress.turns_total += s.turns.size();
    const int64_t t0 = now_ns();
    for (size_t a = 0; a < o.scripts.size(); ++a) {
      const auto delay = std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(o.scripts[a].start_s));
      if (o.scripts[a].start_s > 0) caf::delayed_anon_send(view->clients[a], delay, atom::start_v);
      else caf::anon_send(view->clients[a], atom::start_v);
    }

    int64_t last_report = t0;
    int64_t last_event = t0;
    while (progress.agents_done < progress.agents_total && stall.empty()) {
      self->receive(
          [&](atom::result, const envelope<schema::TurnResult>& e, const envelope<schema::TurnPayload>& p) {
            const auto r = decode(e);
            const turn_record rec = record_of(r, t0);
            records.push_back(rec);
            const auto payload = decode(p);
            if (r.error.empty() && !payload.tokens.empty()) to_verify.emplace_back(payload.tokens, r.generated);
            ++progress.turns_done;
            last_event = now_ns();
          },
          [&](atom::finish, uint32_t) {
            ++progress.agents_done;
            last_event = now_ns();
          },
          caf::after(std::chrono::milliseconds(200)) >>
              [&] {
                if (nodes) stall = nodes->check();
                if (stall.empty() && seconds_between(last_event, now_ns()) > c.timeout_s)
                  stall = fmt::format("no turn finished for {:.0f} s ({} of {} turns done{})", c.timeout_s,
                                      progress.turns_done, progress.turns_total, waiting_hint(self, *view));
              });
      if (o.on_progress && seconds_between(last_report, now_ns()) >= 1.0) {
        last_report = now_ns();
        progress.elapsed_s = seconds_between(t0, last_report);
        o.on_progress(progress);
      }
    }
    if (o.on_progress) {
      progress.elapsed_s = seconds_between(t0, now_ns());
      o.on_progress(progress);
    }
    if (nodes && stall.empty()) {
      try {
        for (const auto& s : nodes->stats()) {
          summary.snic_bytes.push_back(s.snic_bytes);
          summary.persisted_blocks += s.persisted_blocks;
        }
        nodes->stop();
      } catch (const user_error& e) {
        stall = e.what();
      }
    }
    nodes.reset();  // ends node processes still running
    stop_all();
  }  // the actor system waits here for every actor to stop
  if (!stall.empty()) throw user_error((o.processes ? "run failed: " : "run stalled: ") + stall);

  for (auto& io : ios) {
    const auto s = io->stats();
    summary.snic_bytes.push_back(s.snic_bytes);
    summary.persisted_blocks += s.persisted_blocks;
  }
  summarize_turns(summary, records);

  // JCT lower bound: the slower of reading every byte at full SNIC rate and computing every prefill.
  uint64_t total_bytes = 0;
  for (auto b : summary.snic_bytes) total_bytes += b;
  const double bytes_bound = c.snic_gb_per_s > 0 ? double(total_bytes) / (c.snic_gb_per_s * 1e9 * c.total_nodes()) : 0;
  // The compute this run had to do: every prompt token past the blocks it could load.
  double compute_s = 0;
  for (const auto& r : records) {
    if (!r.error.empty() || r.prompt_tokens == 0) continue;
    const uint64_t cached = uint64_t(r.hit_blocks) * geo.block_tokens;
    compute_s += fit.seconds(prefill_flops(spec, cached, r.prompt_tokens - cached));
  }
  const double compute_bound = compute_s / double(c.prefill_nodes * c.engines_per_node);
  summary.jct_lower_bound_s = std::max(bytes_bound, compute_bound);
  summary.jct_over_bound = summary.jct_lower_bound_s > 0 ? summary.jct_s / summary.jct_lower_bound_s : 0;

  // Verification after the run, so it does not slow the measured cluster.
  if (!to_verify.empty() && c.backend != "modeled") {
    // The reference is the cpu backend with the same weights: the run's own first backend when it is one
    // (every engine has stopped by now), else a fresh one.
    std::shared_ptr<gpu::compute_backend> reference = first;
    if (c.backend != "cpu") {
      gpu::backend_options ref = base.backend_options;
      ref.kind = "cpu";
      reference = gpu::make_backend(ref);
    }
    for (const auto& [prompt, generated] : to_verify) {
      ++summary.verified_turns;
      if (recompute_turn(*reference, prompt, uint32_t(generated.size())) != generated) ++summary.mismatched_turns;
    }
  }
  return summary;
}

}  // namespace dualpath::actors
