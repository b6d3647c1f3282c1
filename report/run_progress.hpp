#pragma once
// How far a run is, as the launcher samples it about once a second (docs/design.md §15): what its progress
// line, the metrics and the live page show while it lasts.
#include <cstdint>
#include <vector>

namespace dualpath::report {

struct run_progress {
  uint64_t turns_done = 0, turns_total = 0;
  uint32_t agents_done = 0, agents_total = 0;
  double elapsed_s = 0;
  // Per node, as the scheduler sees it: turns placed with their PE or DE there, and the requests its engines
  // hold (seq_e summed: in prefill on a prefill node, decoding on a decode node).
  std::vector<uint32_t> in_flight_by_node, engine_requests_by_node;
  // Per node, 1 while the scheduler files it as a prefill node: the cluster file's role, or the one adaptive
  // P/D moved it to (docs/design.md §7.9).
  std::vector<uint8_t> prefill_by_node;
};

}  // namespace dualpath::report
