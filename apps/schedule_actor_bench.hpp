#pragma once
// `dualpath bench schedule --actor`: the scheduler actor's throughput, end to end: the real actor (decode,
// decide, charge the fresh view, encode, reply) driven by one leader actor per node of a synthetic cluster of
// the paper's size and by a client that submits encoded requests. Prefill leaders fetch as soon as their
// last fetch is answered and report what they were given; decode leaders adopt their hand-offs, report every
// 2 ms and finish half of what they hold each time, so HBM comes back as in a run.
#include <cstdint>
#include <string>

namespace dualpath::cli {

struct schedule_actor_bench_options {
  uint32_t engines = 1152;  // 8 per node, one third of the nodes prefill
  uint64_t requests = 200000;
  std::string policy = "balanced";
  uint32_t repeats = 3;      // the median run is reported
  uint32_t in_flight = 512;  // submits the client keeps unanswered
  uint64_t seed = 1;
  double timeout_s = 120;  // per run: a run that has not assigned every request by then fails
};

struct schedule_actor_bench_result {
  std::string policy;
  uint32_t engines = 0, prefill_nodes = 0, decode_nodes = 0;
  uint64_t requests = 0;
  double assignments_per_s = 0;      // median run: requests / wall seconds from the first submit to the last assignment
  double cpu_us_per_assignment = 0;  // the same run: the process's CPU time (scheduler and drivers) per assignment
  uint64_t fetches = 0, empty_fetches = 0, reports = 0;  // the same run

  std::string to_json() const;
  std::string to_text() const;
};

// Throws user_error for bad options and runtime_error when a run does not finish within timeout_s.
schedule_actor_bench_result run_schedule_actor_bench(const schedule_actor_bench_options& options);

}  // namespace dualpath::cli
