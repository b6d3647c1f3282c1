#pragma once
// The actors speak the protocol (docs/design.md §14): its interfaces, envelopes and failures are the words
// every actor's state and handler uses, so `dualpath::actors` sees `dualpath::protocol` whole. Code above
// (cluster/, apps/) names protocol types as `protocol::...`.
#include "protocol/interfaces.hpp"

namespace dualpath::actors {
using namespace dualpath::protocol;
}  // namespace dualpath::actors
