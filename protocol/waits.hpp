#pragma once
// Every wait between actors, derived in one place from the cluster file's `runtime.timeout_s`
// (docs/design.md §14, "Bounded waits"). The handler comments of protocol/interfaces.hpp name these.
#include <caf/timespan.hpp>

#include <algorithm>
#include <chrono>

#include "core/cluster_config.hpp"

namespace dualpath::protocol {

struct waits {
  double timeout_s = 60;

  // `timeout_s`: a client's submit, a leader's fetch, the launcher's and the control port's questions to
  // the scheduler or a node, an engine's question to a client or another engine.
  caf::timespan request() const { return seconds(timeout_s); }
  // `2·timeout_s`: an engine's request to a traffic queue. The data plane answers each within `timeout_s`
  // (slot waits, storage reads and fabric transfers are each bounded by it), so the answer, success or
  // failure, always arrives, and slots granted with it are never dropped unseen.
  caf::timespan data_plane() const { return seconds(2 * timeout_s); }
  // `timeout_s + 20 ×` what the cost model expects: a request to the compute worker, so a long pass on a
  // slow backend is never cut short and a hung one is still noticed.
  caf::timespan compute(double expected_s) const { return seconds(timeout_s + 20 * expected_s); }

  // `max(30 s, timeout_s)`: the launcher's wait for every node process to join and be wired, and a spawned
  // node's wait for the registry. Starting a process (providers, model, registered memory) is no data-plane
  // wait, and a loaded machine stretches it many times over.
  caf::timespan startup() const { return seconds(std::max(30.0, timeout_s)); }

  static caf::timespan seconds(double s) {
    return std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(s));
  }
};

inline waits waits_of(const cluster_config& c) { return waits{c.timeout_s}; }

}  // namespace dualpath::protocol
