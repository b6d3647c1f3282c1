#pragma once
// What a run measured (issue: `dualpath run` report): latency distributions, the TTFT breakdown, SNIC
// balance, read paths, the JCT bound and verification counts. Pure functions over turn records.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/pass_timeline.hpp"
#include "report/ep_round_series.hpp"
#include "report/load_series.hpp"
#include "report/snic_over_time.hpp"
#include "schedule/policy.hpp"
#include "schedule/role_planner.hpp"

namespace dualpath::report {

// What a turn was, beside its stamps.
struct turn_facts {
  uint32_t agent = 0, turn = 0;
  std::string error;
  schedule::read_path path = schedule::read_path::pe;
  uint32_t hit_blocks = 0, block_tokens = 0, prompt_tokens = 0, generated_tokens = 0, corrupt_blocks = 0;
  uint32_t pe_engine = 0, de_engine = 0;  // the engines that served it (the simulator fills them)
  uint64_t kv_verified = 0, kv_corrupt = 0;
};
// A finished turn as the report holds it: its facts, and the times derived from its stamps.
struct turn_record : turn_facts {
  // ttst: submission -> second token (the paper's); the first-to-second interval is second_token_gap;
  // tpot: per token after the second, up to the last generated token (not the write-back wait).
  double ttft_s = 0, ttst_s = 0, second_token_gap_s = 0, tpot_s = 0;
  bool has_ttst = false, has_tpot = false;
  double start_s = 0;  // submitted, since run start
  double queue_s = 0, kv_read_s = 0, assign_s = 0, prefill_s = 0;
  // After the first token: to the decode engine's hand-off, loading its KV into HBM, and (from the last
  // token) waiting for the write-back of its blocks until `done`.
  double handoff_s = 0, hbm_load_s = 0, write_back_s = 0;
  uint32_t hit_tokens = 0;  // prompt tokens whose KV came from storage (hit_blocks · block_tokens)
  double done_s = 0;        // since run start
};

struct distribution {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};
distribution summarize(std::vector<double> values);

// The highest mean TTFT over any `window_s` of turn completions holding at least `min_turns` turns: how bad
// TTFT got while the load lasted, which a whole-run mean dilutes with the quiet start and drain.
double peak_window_mean_ttft(const std::vector<turn_record>& records, double window_s = 10.0, size_t min_turns = 10);

struct run_summary {
  std::string policy;
  double jct_s = 0;
  uint64_t turns = 0, failed_turns = 0;
  distribution ttft, ttst, second_token_gap, tpot;
  distribution e2e;               // a turn's submission to its answer's end
  distribution inter_token;       // between tokens as a streaming client got them (served runs; empty otherwise)
  double prompt_tps = 0;          // every prompt token (hit ones included) of the answered turns / JCT
  double agent_jct_mean_s = 0;    // per agent: its last turn's answer minus its first turn's submission
  double ttft_peak_window_s = 0;  // peak_window_mean_ttft
  distribution queue, assign, kv_read, prefill;
  distribution handoff, hbm_load, write_back;  // after the first token (handoff_breakdown_s)
  uint32_t prefill_nodes = 0;                  // nodes 0..prefill_nodes-1 are prefill nodes, the rest decode nodes
  std::vector<uint64_t> snic_bytes;            // per node
  double snic_max_over_avg = 0;
  uint64_t store_read_bytes = 0;           // bytes read from block files, summed over nodes (0 under oracle)
  std::vector<uint64_t> snic_write_bytes;  // per node: write-back that left through its SNIC
  snic_over_time snic_time;                // per 1 s window (snic_over_time.hpp)
  load_over_time load_time;                // engines' load and finished turns per window (load_series.hpp)
  ep_round_series ep;                      // `ep_sync`: per EP round, attention max/avg (ep_round_series.hpp)
  // Prefill passes phase by phase (core/pass_timeline.hpp): the engines of the launcher's process only, so an
  // embedded run; empty for node processes and the simulator.
  pass_timeline::summary passes;
  // Working set λ·T̄·len/2 (working_set.hpp): tokens and bytes, with the λ, T̄ and len it used.
  double ws_lambda_per_s = 0, ws_t_bar_s = 0, ws_len_tokens = 0, ws_tokens = 0, ws_bytes = 0;
  uint64_t path_pe = 0, path_de = 0, path_split = 0;
  double jct_lower_bound_s = 0, jct_over_bound = 0;
  uint64_t verified_turns = 0, mismatched_turns = 0;
  uint64_t kv_verified_blocks = 0, kv_corrupt_blocks = 0, corrupt_blocks_recomputed = 0;
  uint64_t persisted_blocks = 0;
  uint64_t hit_blocks = 0;  // Full Blocks served from storage (either path), summed over turns
  double hit_rate = 0;      // hit tokens over prompt tokens of the answered turns
  // Multi-process runs (docs/design.md §13): nodes lost while the run went on, and turns re-run because of it.
  uint64_t lost_nodes = 0, migrated_turns = 0;
  uint64_t rejoined_nodes = 0;  // lost nodes that joined again and took work
  // Adaptive P/D in the runtime (docs/design.md §7.9): the moves made, and the prefill nodes at the end.
  bool adaptive = false;
  std::vector<schedule::role_switch> role_switches;
  uint32_t final_prefill_nodes = 0;
  // Faults survived (docs/design.md §13): turns re-run after a KV transfer's error; blocks a write-back
  // could not persist (ENOSPC, EROFS, EIO: the turn is answered, the next turn recomputes them).
  uint64_t retried_turns = 0, unpersisted_blocks = 0;
  // Peers refused for a wrong cluster secret (docs/design.md §13): registry messages, control commands.
  uint64_t refused_joins = 0, refused_commands = 0;
  std::string first_error;
};

// One turn's stamps in seconds since the run's start; a stamp the turn never reached is empty.
struct turn_stamps {
  std::optional<double> submitted, assigned, kv_ready, prefill_start, first_token, second_token, last_token, done;
  std::optional<double> handoff, in_hbm;  // the decode engine received the hand-off; the turn's KV in its HBM
};
// The one way a turn record is made, by the runtime's launcher and by the simulator alike: TTFT and its
// breakdown from the stamps, TPOT per token after the second (not the write-back wait).
turn_record make_turn_record(const turn_facts& f, const turn_stamps& t);

// Fills the per-turn parts of `s` from `records`, the JCT (last turn done) included.
void summarize_turns(run_summary& s, const std::vector<turn_record>& records);

// What the JCT lower bound needs to know of the cluster (docs/design.md §15).
struct bound_inputs {
  double snic_gb_per_s = 0;  // per node; 0 = uncapped (no storage term)
  uint32_t nodes = 0, prefill_engines = 0, block_tokens = 0;
  std::function<double(uint64_t cached, uint64_t tokens)> prefill_seconds;  // one engine's time for a prefill
};
// The slower of reading every byte at full SNIC rate on all nodes and computing, spread over the prefill
// engines, every prompt token past the blocks each turn could load; and JCT over that bound.
void set_jct_bound(run_summary& s, const std::vector<turn_record>& records, const bound_inputs& in);

nlohmann::json to_json(const run_summary& s);
// Adaptive P/D's moves (docs/design.md §7.9), as the runtime's and the simulator's reports list them.
nlohmann::json role_switches_json(const std::vector<schedule::role_switch>& moves);
// {"runs": [...], "speedup": {"dualpath_vs_basic": ...}} for the pairs present.
nlohmann::json report_json(const std::vector<run_summary>& runs);
std::string report_table(const std::vector<run_summary>& runs);

// Online serving (docs/design.md §11, §12): a run at a given arrival rate meets the SLO when no turn failed, the
// peak 10-second mean TTFT is within ttft_s (the paper stops a run once TTFT exceeds its SLO) and the mean
// TPOT within tpot_s. A policy's capacity is the highest APS of a sweep at which it, and every lower APS
// of the sweep, met the SLO (0 if the lowest did not).
struct serving_slo {
  double ttft_s = 4.0;
  double tpot_s = 0.050;
};
struct sweep_point {
  double aps = 0;
  run_summary run;
};
using aps_sweep = std::map<std::string, std::vector<sweep_point>>;  // per policy

bool meets_slo(const run_summary& r, const serving_slo& slo);
double capacity_aps(std::vector<sweep_point> points, const serving_slo& slo);
// {"slo": {...}, "policies": {P: {"capacity_aps": x, "points": [{aps, meets_slo, run}...]}},
//  "capacity_ratio": {"dualpath_vs_basic": ...}}
nlohmann::json sweep_json(const aps_sweep& sweep, const serving_slo& slo);
std::string sweep_table(const aps_sweep& sweep, const serving_slo& slo);

}  // namespace dualpath::report
