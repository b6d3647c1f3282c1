#pragma once
// The simulator's state and event handlers (private to sim/). Engine ids are the runtime's: node n holds
// engines n·g .. n·g+g-1, prefill nodes first. Each agent has at most one turn in flight, so a turn is
// addressed by its agent index.
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/kv_geometry.hpp"
#include "core/model_catalog.hpp"
#include "core/modes.hpp"
#include "core/roofline.hpp"
#include "schedule/batcher.hpp"
#include "schedule/policy.hpp"
#include "schedule/role_planner.hpp"
#include "sim/event_queue.hpp"
#include "sim/sim.hpp"
#include "sim/step_run.hpp"

namespace dualpath::sim {

// One agent and the turn it has in flight.
struct agent_state {
  const sim_agent* script = nullptr;
  uint32_t turn = 0;
  uint64_t stored_tokens = 0;  // leading tokens of its context whose blocks are persisted
  // The turn in flight.
  uint64_t prompt = 0;
  uint32_t gen = 1;
  uint32_t hit = 0;  // hit blocks (all arrive intact: the simulator has no corruption)
  schedule::assignment asg;
  uint32_t pending = 0;                 // loads and reservations not yet complete
  uint32_t pe_slots = 0, de_slots = 0;  // DRAM slots held on the PE and the DE node
  uint64_t new_kv = 0;                  // PE HBM held for the new KV
  bool hit_forwarded = false;
  uint64_t de_hbm = 0;
  uint64_t position = 0;  // decode: position of the token the next step processes
  uint32_t generated = 0;
  double submitted = 0, assigned = 0, kv_ready = 0, prefill_start = -1, first_token = 0, second_token = -1,
         last_token = 0, writes_done = 0, handoff = 0, in_hbm = 0;
  uint64_t written_blocks = 0;
};

// Adaptive P/D (docs/design.md §7.9): a draining node takes no new work and finishes what it holds; a
// switching one is being laid out for its new role.
enum class node_phase : uint8_t { serving, draining, switching };

struct node_state {
  bool prefill = true;
  node_phase phase = node_phase::serving;
  size_t move = 0;                             // while draining or switching: its entry in the run's role switches
  double read_free_at = 0, write_free_at = 0;  // the SNIC's FIFOs drain at these times
  uint64_t slots = 0, slots_free = 0;          // DRAM buffer: Full Block slots
  struct waiter {
    uint32_t agent, blocks;
    uint64_t read_bytes;
  };
  std::deque<waiter> slot_waiters;           // FIFO: a load takes its slots when the head fits
  uint64_t waiting_read_bytes = 0;           // reads of the loads still waiting for slots (read_q counts them)
  uint64_t read_bytes = 0, write_bytes = 0;  // submitted to the SNIC (reads: delivered = this − what is queued)
};

struct prefill_engine {
  uint32_t node = 0;
  uint64_t hbm_free = 0;
  uint32_t seq = 0;
  uint64_t tok = 0;
  std::deque<schedule::prefill_work> ready;
  bool busy = false;
  std::vector<schedule::batch_entry> batch;
  uint64_t staging = 0;
  double pass_s = 0;
};

struct decode_engine {
  uint32_t node = 0;
  uint64_t hbm_free = 0;
  uint32_t seq = 0;
  uint64_t tok = 0;
  // Assigned here, not yet handed off: what the scheduler's fresh view charges until the engine counts them.
  uint32_t promised_seq = 0;
  uint64_t promised_tok = 0, promised_hbm = 0;
  std::deque<uint32_t> waiting;  // handed off, waiting for HBM (FIFO)
  std::vector<uint32_t> active;  // decoding, in admission order
  // The steps in flight run as one event while the batch stays the same: `steps` steps from `start`, each a
  // roofline whose two roofs grow linearly with the step index j (docs/design.md §17). `version` voids an
  // event cut short by an admission.
  bool stepping = false;
  size_t step_items = 0;
  uint64_t steps = 0, version = 0;
  double start = 0;
  step_run run;
};

class simulator {
 public:
  explicit simulator(const sim_options& o);
  sim_result run();

 private:
  // agents (simulator.cpp)
  void arrive(uint32_t agent);
  void turn_done(uint32_t agent);
  void fail(uint32_t agent, const std::string& why);
  void record(uint32_t agent, const std::string& error);
  // scheduler (scheduler_model.cpp)
  void want_round();
  void round();
  void refresh_snapshot();
  void start(const schedule::assignment& a);
  void unpromise(uint32_t agent);  // the decode engine now counts the request itself (or it failed)
  // storage and DRAM (prefill_model.cpp)
  void take_slots(uint32_t node, uint32_t agent, uint32_t blocks, uint64_t read_bytes);
  void grant_slots(uint32_t node);
  void release_slots(uint32_t node, uint32_t blocks);
  double read(uint32_t node, uint64_t bytes);
  double write(uint32_t node, uint64_t bytes);
  uint64_t read_q(uint32_t node) const;
  // prefill (prefill_model.cpp)
  void load_done(uint32_t agent);
  void try_pass(uint32_t engine);
  bool plan_pass(uint32_t engine);
  double pass_seconds(const prefill_engine& pe) const;
  void pass_done(uint32_t engine);
  void try_group(uint32_t node);  // ep_lockstep: every engine of the node passes together
  // decode (decode_model.cpp)
  void handoff(uint32_t agent);
  void admit(uint32_t de);
  void admitted(uint32_t agent);
  void try_step(uint32_t de);
  void step_done(uint32_t de, uint32_t version);
  void join_steps(uint32_t de);
  void finish(uint32_t agent);
  // adaptive P/D (role_model.cpp)
  void plan();
  schedule::role_load window_load() const;
  void check_drained();
  void push_tick(double t, event_kind kind);
  bool drained(uint32_t node) const;
  void role_switched(uint32_t node);
  void add_to_snapshot(uint32_t node);
  // The node's engines as new: idle, their role's HBM free (set-up, and a node that changed role).
  void reset_engines(uint32_t node);

  decode_engine& de_of(uint32_t engine) { return des_[engine - first_de_]; }
  uint32_t node_of(uint32_t engine) const { return engine / cfg_.engines_per_node; }
  double cnic_seconds(uint64_t bytes) const { return cnic_rate_ > 0 ? double(bytes) / cnic_rate_ : 0; }

  const sim_options& o_;
  const cluster_config& cfg_;
  run_mode mode_;
  model_spec model_;
  kv_geometry geo_;          // as the runtime lays KV out (core/kv_geometry.hpp)
  uint64_t file_bytes_ = 0;  // one Full Block file as the store reads and writes it (header and padding)
  schedule::flops_fit fit_;  // the compute roof: β's calibration and the batcher's estimates
  roofline roof_;            // what a pass and a step take (core/roofline.hpp), as the modeled backend sleeps
  schedule::policy_params params_;
  std::unique_ptr<schedule::policy> policy_;
  std::unique_ptr<schedule::prefill_batcher> batcher_;
  double snic_rate_ = 0, cnic_rate_ = 0;  // bytes/s; 0 = uncapped
  uint64_t hbm_bytes_ = 0;                // per decode engine
  uint64_t prefill_hbm_bytes_ = 0;        // per prefill engine
  uint32_t first_de_ = 0;                 // first decode engine id
  bool lockstep_ = false;                 // --ep-lockstep or the cluster file's ep_sync

  event_queue events_;
  double now_ = 0;
  std::vector<agent_state> agents_;
  std::vector<node_state> nodes_;
  std::vector<prefill_engine> pes_;
  std::vector<decode_engine> des_;
  std::unordered_set<uint64_t> stored_hashes_;  // Mooncake block ids persisted so far

  schedule::cluster_snapshot snap_;
  std::deque<schedule::request_info> waiting_;
  bool round_pending_ = false;
  uint32_t round_start_ = 0;           // prefill node (index into prefill_ids_) that fetches first, rotating
  std::vector<uint32_t> prefill_ids_;  // reused by every round

  std::vector<std::vector<report::snic_series_sample>> snic_samples_;  // per node, one per window boundary
  void sample();

  // Adaptive P/D: what the window so far has seen, and the moves made.
  double window_busy_s_ = 0, window_tpot_sum_ = 0;
  uint64_t window_tpot_n_ = 0;
  std::optional<schedule::role_driver> driver_;  // with planner.adaptive
  uint64_t submitted_ = 0;                       // turns submitted so far
  std::vector<uint32_t> draining_;               // nodes draining now
  size_t ticks_pending_ = 0;                     // plan and sample events in the queue: the rest is the run's own work
  std::vector<role_switch> switches_;

  std::vector<report::turn_record> records_;
  uint64_t turns_total_ = 0;
  uint32_t agents_done_ = 0;
  sim_counters counters_;
  double lockstep_ratio_sum_ = 0;
  uint64_t lockstep_rounds_ = 0;
  std::chrono::steady_clock::time_point wall_start_;
};

}  // namespace dualpath::sim
