#pragma once
// Why a turn failed (schema/runtime.capnp Failure, docs/design.md §13): a transient fault (a KV transfer's
// error completion) is re-run by the agent client; a fatal one is the turn's answer.
#include <cstdint>

namespace dualpath::protocol {

enum class failure_kind : uint8_t { none, fatal, transient };

}  // namespace dualpath::protocol
