#pragma once
// The request ids a leader's report acknowledges, per engine of its group (docs/design.md §7.1). An engine
// tells its leader which requests its numbers count each time they change; the report names every request
// the engine counted since the previous report, not only those it counts now, so a request that arrived
// and left between two reports (a short prefill) is acknowledged too and its charge does not linger.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "schedule/fresh_view.hpp"

namespace dualpath::schedule {

class report_acks {
 public:
  explicit report_acks(size_t engines = 0) : latest_(engines), seen_(engines) {}

  // Engine `index` (its position in the group) now counts exactly `ids`.
  void on_engine(size_t index, std::vector<uint64_t> ids);
  // Per engine, sorted and without repeats: the requests counted since the last take(); afterwards
  // only those each engine counts now are remembered.
  std::vector<std::vector<uint64_t>> take();

 private:
  std::vector<std::vector<uint64_t>> latest_, seen_;
};

// Which of a leader's reports go out. One that repeats the last one sent (the same numbers, no request
// acknowledged; an engine that holds a request acknowledges it in every report) leaves the scheduler's view
// as it is, so it goes out only every `every`-th tick; the next one still lets the view drop charges whose
// expiry has passed (docs/design.md §7.1).
class report_gate {
 public:
  explicit report_gate(uint32_t every) : every_(every) {}
  // Called once a tick with the report the leader has made: true when it is to be sent.
  bool send(const group_report& r);

 private:
  uint32_t every_ = 1, repeats_ = 0;  // repeats left out since the last report sent
  std::optional<node_snapshot> last_;
};

}  // namespace dualpath::schedule
