#include "report/working_set.hpp"

#include <map>

namespace dualpath::report {

working_set working_set_of(const std::vector<turn_record>& records, double jct_s, double agent_jct_mean_s,
                           uint64_t kv_bytes_per_token) {
  working_set w;
  std::map<uint32_t, const turn_record*> last;  // agent -> its last answered turn
  for (const auto& r : records) {
    if (!r.error.empty()) continue;
    auto [it, fresh] = last.try_emplace(r.agent, &r);
    if (!fresh && r.turn > it->second->turn) it->second = &r;
  }
  if (last.empty() || !(jct_s > 0)) return w;
  double len_sum = 0;
  for (const auto& [agent, r] : last) len_sum += double(r->prompt_tokens) + double(r->generated_tokens);
  w.lambda_per_s = double(last.size()) / jct_s;
  w.t_bar_s = agent_jct_mean_s;
  w.len_tokens = len_sum / double(last.size());
  w.tokens = w.lambda_per_s * w.t_bar_s * w.len_tokens / 2;
  w.bytes = w.tokens * double(kv_bytes_per_token);
  return w;
}

void set_working_set(run_summary& s, const std::vector<turn_record>& records, uint64_t kv_bytes_per_token) {
  const working_set w = working_set_of(records, s.jct_s, s.agent_jct_mean_s, kv_bytes_per_token);
  s.ws_lambda_per_s = w.lambda_per_s;
  s.ws_t_bar_s = w.t_bar_s;
  s.ws_len_tokens = w.len_tokens;
  s.ws_tokens = w.tokens;
  s.ws_bytes = w.bytes;
}

}  // namespace dualpath::report
