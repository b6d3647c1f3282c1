// The simulator's set-up, event loop and agents (docs/design.md §17).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/cost_model.hpp"
#include "core/status.hpp"
#include "core/hardware.hpp"
#include "schedule/calibration.hpp"
#include "sim/model.hpp"
#include "storage/block_format.hpp"

namespace dualpath::sim {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

simulator::simulator(const sim_options& o) : o_(o), cfg_(o.config), mode_(run_mode_of(o.policy)) {
  validate_cluster_config(cfg_, "cluster configuration");
  model_ = find_model(cfg_.model);
  geo_ = kv_geometry_of(model_, cfg_);
  file_bytes_ = storage::block_format::of(geo_).file_bytes();

  // Compute as the modeled backend does it: the roofline of the GPU profile at the MFU, and its compute
  // roof as the FLOPs→time fit.
  const auto& gpu = find_gpu(cfg_.gpu);
  roof_ = make_roofline(gpu, cfg_.mfu);
  fit_ = {0.0, 1.0 / (gpu.peak_flops * cfg_.mfu)};
  snic_rate_ = cfg_.snic_gb_per_s * 1e9;
  cnic_rate_ = cfg_.cnic_gb_per_s * 1e9;
  hbm_bytes_ = uint64_t(cfg_.hbm_gb * 1e9);
  prefill_hbm_bytes_ = uint64_t(cfg_.prefill_hbm() * 1e9);
  lockstep_ = o.ep_lockstep || cfg_.ep_sync;

  mean_turn turn;
  for (const auto& a : o.agents)
    for (const auto& t : a.turns) turn.add(t);
  params_ = schedule::calibrate(schedule::calibration_input_of(cfg_, model_, fit_, geo_, turn)).params;
  // The groups of docs/design.md §7.2/§7.3, as the launcher gives them to the scheduler.
  params_.groups = {cfg_.pe_group_nodes, cfg_.de_group_nodes, cfg_.prefill_nodes};
  policy_ = schedule::make_policy(mode_.scheduler_policy);
  // A switch names a scheduler policy, as in the runtime's scheduler (actors/scheduler.cpp): every name
  // checked before the run.
  for (const auto& s : cfg_.switches) schedule::make_policy(s.policy);

  // The prefill engine's batcher, built as the runtime builds it (docs/design.md §7.6-7.7).
  const double quota_s = mode_.compute_quota ? cfg_.quota_ms / 1000.0 : schedule::no_quota_s;
  batcher_ =
      std::make_unique<schedule::prefill_batcher>(schedule::quota_estimate(cfg_.quota_scope, model_, fit_), quota_s);

  const uint32_t g = cfg_.engines_per_node;
  const uint64_t slots = uint64_t(cfg_.dram_buffer_gb * 1e9) / file_bytes_;
  if (slots == 0)
    throw user_error("hardware.dram_buffer_gb: holds no Full Block of " + std::to_string(file_bytes_) + " bytes");
  // Every engine has both a prefill and a decode state, and its node's role says which one serves, so a node
  // can change role (adaptive P/D) without renumbering anything.
  first_de_ = 0;
  pes_.resize(cfg_.total_nodes() * g);
  des_.resize(cfg_.total_nodes() * g);
  for (uint32_t n = 0; n < cfg_.total_nodes(); ++n) {
    node_state node;
    node.prefill = n < cfg_.prefill_nodes;
    node.slots = node.slots_free = slots;
    nodes_.push_back(node);
    reset_engines(n);
    add_to_snapshot(n);
  }

  agents_.resize(o.agents.size());
  for (size_t a = 0; a < o.agents.size(); ++a) {
    agents_[a].script = &o.agents[a];
    turns_total_ += o.agents[a].turns.size();
  }
  records_.reserve(turns_total_);
}

void simulator::reset_engines(uint32_t n) {
  for (uint32_t i = 0; i < cfg_.engines_per_node; ++i) {
    const uint32_t e = n * cfg_.engines_per_node + i;
    pes_[e] = prefill_engine{};
    pes_[e].node = n;
    pes_[e].hbm_free = prefill_hbm_bytes_;
    des_[e] = decode_engine{};
    des_[e].node = n;
    des_[e].hbm_free = hbm_bytes_;
  }
}

sim_result simulator::run() {
  wall_start_ = std::chrono::steady_clock::now();
  for (uint32_t a = 0; a < agents_.size(); ++a) {
    if (agents_[a].script->turns.empty()) ++agents_done_;
    else events_.push(agents_[a].script->start_s, event_kind::arrival, a);
  }
  for (uint32_t i = 0; i < cfg_.switches.size(); ++i) events_.push(cfg_.switches[i].at_s, event_kind::policy_switch, i);
  snic_samples_.assign(nodes_.size(), {});
  if (o_.window_s > 0) push_tick(0, event_kind::sample);
  if (cfg_.adaptive) push_tick(cfg_.planner_window_s, event_kind::plan);
  double last_progress = 0;
  while (!events_.empty() && agents_done_ < agents_.size()) {
    const event e = events_.pop();
    now_ = e.t;
    ++counters_.events;
    switch (e.kind) {
      case event_kind::arrival: arrive(e.id); break;
      case event_kind::load_done: load_done(e.id); break;
      case event_kind::pass_done: pass_done(e.id); break;
      case event_kind::round: round(); break;
      case event_kind::admitted: admitted(e.id); break;
      case event_kind::step_done: step_done(e.id, e.tag); break;
      case event_kind::turn_done: turn_done(e.id); break;
      case event_kind::sample: --ticks_pending_, sample(); break;
      case event_kind::policy_switch: policy_ = schedule::make_policy(cfg_.switches[e.id].policy); break;
      case event_kind::plan: --ticks_pending_, plan(); break;
      case event_kind::role_switched: role_switched(e.id); break;
    }
    if (!draining_.empty()) check_drained();
    if (o_.on_progress && (counters_.events & 0xffff) == 0) {
      const double wall = seconds_since(wall_start_);
      if (wall - last_progress >= 1.0) {
        last_progress = wall;
        o_.on_progress({records_.size(), turns_total_, now_, wall});
      }
    }
  }
  counters_.wall_s = seconds_since(wall_start_);
  counters_.sim_s = now_;
  if (agents_done_ < agents_.size())
    throw user_error(fmt::format("simulation stalled at {:.1f} s: {} of {} turns done, {} requests cannot be placed",
                                 now_, records_.size(), turns_total_, waiting_.size()));
  if (o_.on_progress) o_.on_progress({records_.size(), turns_total_, now_, counters_.wall_s});

  sim_result r;
  auto& s = r.summary;
  s.policy = o_.policy;
  s.prefill_nodes = cfg_.prefill_nodes;
  for (const auto& n : nodes_) {
    s.snic_bytes.push_back(n.read_bytes);
    r.snic_write_bytes.push_back(n.write_bytes);
  }
  for (const auto& a : agents_) s.persisted_blocks += a.written_blocks;
  report::summarize_turns(s, records_);
  sample();  // the end of the last window
  s.snic_time = report::snic_windows(snic_samples_, s.jct_s, o_.window_s);
  const model_spec m = model_;
  const auto fit = fit_;
  report::set_jct_bound(
      s, records_,
      {cfg_.snic_gb_per_s, cfg_.total_nodes(), cfg_.prefill_nodes * cfg_.engines_per_node, geo_.block_tokens,
       [m, fit](uint64_t cached, uint64_t tokens) { return fit.seconds(prefill_flops(m, cached, tokens)); }});
  if (lockstep_rounds_) counters_.attention_max_over_avg = lockstep_ratio_sum_ / double(lockstep_rounds_);
  r.counters = counters_;
  r.adaptive = cfg_.adaptive;
  r.role_switches = switches_;
  for (const auto& n : nodes_) r.final_prefill_nodes += n.prefill;
  r.turns = std::move(records_);  // the run is over: nothing reads them here again
  return r;
}

// The agent's next turn: its shape, its hit blocks (the longest persisted prefix, as the client's store
// lookup finds it), then the scheduler's queue.
void simulator::arrive(uint32_t id) {
  agent_state& a = agents_[id];
  const sim_agent& script = *a.script;
  const turn_shape& shape = script.turns[a.turn];
  const uint32_t bt = geo_.block_tokens;
  a.prompt = std::max<uint64_t>(1, shape.prompt);
  a.gen = std::max<uint32_t>(1, shape.gen);
  uint64_t hit_tokens = 0;
  if (!script.hash_ids.empty()) {
    size_t k = 0;
    while (k < script.hash_ids.size() && stored_hashes_.count(script.hash_ids[k])) ++k;
    hit_tokens = uint64_t(k) * mooncake_block_tokens;
  } else {
    hit_tokens = std::min(shape.hit_candidates, a.stored_tokens);
  }
  a.hit = uint32_t(std::min<uint64_t>(hit_tokens / bt, (a.prompt - 1) / bt));
  a.pending = 0;
  a.pe_slots = a.de_slots = 0;
  a.new_kv = a.de_hbm = 0;
  a.hit_forwarded = false;
  a.generated = 0;
  a.submitted = now_;
  a.prefill_start = a.second_token = -1;
  a.writes_done = now_;

  const auto info = schedule::make_request_info(id, a.prompt, a.gen, a.hit, geo_);
  if (info.kv_bytes > hbm_bytes_) {
    fail(id, fmt::format("turn {} of agent {} needs {} bytes of decode HBM; an engine has {} (hardware.hbm_gb)", a.turn,
                         script.agent, info.kv_bytes, hbm_bytes_));
    return;
  }
  waiting_.push_back(info);
  ++submitted_;
  want_round();
}

void simulator::record(uint32_t id, const std::string& error) {
  const agent_state& a = agents_[id];
  report::turn_facts f;
  f.agent = a.script->agent;
  f.turn = a.turn;
  f.error = error;
  f.prompt_tokens = uint32_t(a.prompt);
  f.block_tokens = geo_.block_tokens;
  report::turn_stamps t;
  t.submitted = a.submitted;
  t.done = now_;
  if (error.empty()) {  // a refused turn never reached the other stamps
    f.path = a.asg.path;
    f.pe_engine = a.asg.pe;
    f.de_engine = a.asg.de;
    f.hit_blocks = a.hit;
    f.generated_tokens = a.gen;
    t.assigned = a.assigned;
    t.kv_ready = a.kv_ready;
    t.prefill_start = a.prefill_start;
    t.first_token = a.first_token;
    if (a.second_token >= 0) t.second_token = a.second_token;
    t.last_token = a.last_token;
    t.handoff = a.handoff;
    t.in_hbm = a.in_hbm;
  }
  records_.push_back(report::make_turn_record(f, t));
}

// A turn that cannot run: answered with the error, the agent goes on with its next turn as the client does.
void simulator::fail(uint32_t id, const std::string& why) {
  record(id, why);
  agent_state& a = agents_[id];
  if (++a.turn < a.script->turns.size()) events_.push(now_, event_kind::arrival, id);
  else ++agents_done_;
}

void simulator::turn_done(uint32_t id) {
  agent_state& a = agents_[id];
  record(id, "");
  // Every block whose KV was computed is persisted by now (the turn waited for its writes).
  a.stored_tokens = a.prompt + a.gen - 1;
  for (uint64_t h : a.script->hash_ids) stored_hashes_.insert(h);
  const double tool_s = a.script->replay_tool_time ? a.script->turns[a.turn].tool_ms / 1000.0 : 0.0;
  if (++a.turn < a.script->turns.size()) events_.push(now_ + tool_s, event_kind::arrival, id);
  else ++agents_done_;
}

// Each node's SNIC at a window boundary: the bytes its FIFO has delivered so far and its read_q. Samples stop
// with the last turn, and when nothing else is left to happen (a stalled run must still end).
void simulator::sample() {
  for (uint32_t n = 0; n < nodes_.size(); ++n) {
    const uint64_t queued = read_q(n) - nodes_[n].waiting_read_bytes;
    snic_samples_[n].push_back({now_, nodes_[n].read_bytes - std::min(queued, nodes_[n].read_bytes), read_q(n)});
  }
  if (agents_done_ < agents_.size() && events_.size() > ticks_pending_)
    push_tick(now_ + o_.window_s, event_kind::sample);
}

void simulator::push_tick(double t, event_kind kind) {
  ++ticks_pending_;
  events_.push(t, kind, 0);
}

void add_counters(nlohmann::json& run, const sim_result& r) {
  const auto& c = r.counters;
  run["sim"] = {{"events", c.events},
                {"rounds", c.rounds},
                {"decisions", c.decisions},
                {"passes", c.passes},
                {"decode_steps", c.decode_steps},
                {"simulated_s", c.sim_s},
                {"wall_s", c.wall_s},
                {"events_per_wall_s", c.wall_s > 0 ? double(c.events) / c.wall_s : 0.0},
                {"snic_write_bytes", r.snic_write_bytes}};
  if (c.attention_max_over_avg > 0) run["sim"]["attention_max_over_avg"] = c.attention_max_over_avg;
  if (r.adaptive) {
    run["sim"]["role_switches"] = report::role_switches_json(r.role_switches);
    run["sim"]["final_prefill_nodes"] = r.final_prefill_nodes;
  }
}

sim_result run_sim(const sim_options& options) {
  if (options.agents.empty()) throw user_error("simulation: the workload has no agents");
  simulator s(options);
  return s.run();
}

}  // namespace dualpath::sim
