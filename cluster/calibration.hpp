#pragma once
// The scheduler's α and β for a run (docs/design.md §7.1, §7.2): from the hardware, the compute fit and the
// workload's mean turn, unless the cluster file sets them.
#include "cluster/vocabulary.hpp"
#include "cluster/node_host.hpp"
#include "core/modes.hpp"
#include "core/trace.hpp"
#include "schedule/calibration.hpp"

namespace dualpath::cluster {

// β is calibrated at the workload's own mean turn (its hit context and append), since attention time grows
// with the context; a workload without turns falls back to four cached blocks and one appended.
schedule::policy_params scheduler_params(const run_base& base, const cluster_config& c, const mean_turn& turn,
                                         const run_mode& mode);

}  // namespace dualpath::cluster
