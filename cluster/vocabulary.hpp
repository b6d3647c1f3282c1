#pragma once
// The launcher composes the layers below it (docs/design.md §14): it spawns the actors, speaks their
// protocol, reports their turns and feeds what a run shows of itself, so `dualpath::cluster` sees
// `dualpath::actors` (and through it `dualpath::protocol`), `dualpath::report` and `dualpath::observe` whole.
#include "actors/vocabulary.hpp"
#include "report/run_report.hpp"

namespace dualpath::observe {}

namespace dualpath::cluster {
using namespace dualpath::actors;
using namespace dualpath::observe;
using namespace dualpath::report;
}  // namespace dualpath::cluster
