#pragma once
// `serve --report FILE` (docs/design.md §18): what the server's clients saw, written when it stops, in the
// run report's shape (report/run_report.hpp) so that `dualpath plot` and the experiments read it as a run:
// each answered request is a turn (TTFT, TPOT, end-to-end, read path, cached tokens), plus the inter-token
// latency as streaming clients got it.
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "observe/serve_metrics.hpp"
#include "report/run_report.hpp"
#include "schedule/policy.hpp"

namespace dualpath::serve {

class served_report {
 public:
  // Keeps every request's record up to `max_requests` (0: none, only the count), and up to `max_gaps`
  // inter-token gaps (a uniform sample of them past that), so a server that runs for days holds a bounded amount.
  explicit served_report(size_t max_requests = 1'000'000, size_t max_gaps = 4'000'000);

  // An answered request; `path`: its hit KV's read path, when the turn came back whole.
  void add(const observe::served_request& r, std::optional<schedule::read_path> path, uint32_t block_tokens);
  void count_failed(const std::string& why);  // a request answered with an error by the cluster (503)
  uint64_t answered() const;                  // requests added, kept or not
  // The requests so far as one run of `policy` on a cluster of `prefill_nodes` prefill nodes.
  report::run_summary summary(const std::string& policy, uint32_t prefill_nodes) const;
  // {"runs": [the summary]} with "requests" (answered and kept) and "requests_dropped" (past the bound).
  nlohmann::json json(const std::string& policy, uint32_t prefill_nodes) const;

 private:
  mutable std::mutex mu_;
  size_t max_requests_, max_gaps_;
  std::vector<report::turn_record> records_;
  std::vector<double> gaps_;
  uint64_t gaps_seen_ = 0, dropped_ = 0, answered_ = 0;
  std::array<uint64_t, 3> paths_{};  // kept requests by read path (schedule::read_path), where it is known
  std::mt19937_64 pick_{0x5eed};     // the sample of gaps past the bound (fixed: the same input, the same report)
};

}  // namespace dualpath::serve
