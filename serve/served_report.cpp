#include "serve/served_report.hpp"

namespace dualpath::serve {

served_report::served_report(size_t max_requests, size_t max_gaps) : max_requests_(max_requests), max_gaps_(max_gaps) {}

void served_report::add(const observe::served_request& r, std::optional<schedule::read_path> path,
                        uint32_t block_tokens) {
  report::turn_facts f;
  f.agent = 0;
  f.prompt_tokens = r.prompt_tokens;
  f.generated_tokens = r.completion_tokens;
  f.block_tokens = block_tokens;
  f.hit_blocks = block_tokens ? r.cached_tokens / block_tokens : 0;
  if (path) f.path = *path;
  report::turn_stamps t;
  t.submitted = r.arrived_s;
  t.first_token = r.arrived_s + r.ttft_s;
  if (r.second_token_s) t.second_token = r.arrived_s + *r.second_token_s;
  if (r.last_token_s) t.last_token = r.arrived_s + *r.last_token_s;
  t.done = r.arrived_s + r.e2e_s;
  std::lock_guard lock(mu_);
  ++answered_;
  if (records_.size() >= max_requests_) {
    ++dropped_;
    return;
  }
  f.agent = uint32_t(records_.size());  // each request its own "agent": the agent JCT is the mean request's
  records_.push_back(report::make_turn_record(f, t));
  if (path) ++paths_[size_t(*path)];
  for (const double g : r.inter_token_s) {
    // Reservoir sampling past the bound: every gap seen has the same chance to be kept.
    if (gaps_.size() < max_gaps_) gaps_.push_back(g);
    else if (const uint64_t at = pick_() % (gaps_seen_ + 1); at < max_gaps_) gaps_[at] = g;
    ++gaps_seen_;
  }
}

void served_report::count_failed(const std::string& why) {
  std::lock_guard lock(mu_);
  if (records_.size() >= max_requests_) return void(++dropped_);
  report::turn_record r;
  r.agent = uint32_t(records_.size());
  r.error = why;
  records_.push_back(std::move(r));
}

uint64_t served_report::answered() const {
  std::lock_guard lock(mu_);
  return answered_;
}

report::run_summary served_report::summary(const std::string& policy, uint32_t prefill_nodes) const {
  std::lock_guard lock(mu_);
  report::run_summary s;
  s.policy = policy;
  s.prefill_nodes = prefill_nodes;
  report::summarize_turns(s, records_);
  // A turn cut short by a stop string never came back with its read path: only the known ones count.
  s.path_pe = paths_[size_t(schedule::read_path::pe)];
  s.path_de = paths_[size_t(schedule::read_path::de)];
  s.path_split = paths_[size_t(schedule::read_path::split)];
  s.inter_token = report::summarize(gaps_);
  return s;
}

nlohmann::json served_report::json(const std::string& policy, uint32_t prefill_nodes) const {
  auto j = report::report_json({summary(policy, prefill_nodes)});
  std::lock_guard lock(mu_);
  j["requests"] = records_.size();
  j["requests_dropped"] = dropped_;
  return j;
}

}  // namespace dualpath::serve
