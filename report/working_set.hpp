#pragma once
// The KV working set of a run by Little's law (docs/design.md §15, after the paper's §8.2): λ · T̄ · len / 2
// tokens, the agents in the system at once times the mean KV each holds over its life (its context grows
// from nothing to `len`), and that times the KV bytes per token.
#include <cstdint>
#include <vector>

#include "report/run_report.hpp"

namespace dualpath::report {

struct working_set {
  double lambda_per_s = 0;  // λ: agents with an answered turn / the run's JCT (arrival = completion rate)
  double t_bar_s = 0;       // T̄: mean agent JCT (agent_jct_mean_s)
  double len_tokens = 0;  // len: mean over those agents of the final context (last answered turn's prompt + generated)
  double tokens = 0;      // λ · T̄ · len / 2
  double bytes = 0;       // tokens × KV bytes per token (all layers)
};

working_set working_set_of(const std::vector<turn_record>& records, double jct_s, double agent_jct_mean_s,
                           uint64_t kv_bytes_per_token);

// Fills the ws_* fields of `s` from `records`, with s.jct_s and s.agent_jct_mean_s (summarize_turns first).
void set_working_set(run_summary& s, const std::vector<turn_record>& records, uint64_t kv_bytes_per_token);

}  // namespace dualpath::report
