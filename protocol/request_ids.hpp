#pragma once
// Request ids (docs/design.md §3): agent << 24 | turn, and in the top 8 bits the attempt. A turn re-run after
// a node was lost (§13) gets a new attempt, so late messages of the old one name an id no one waits for.
// Every message about a turn carries this id; only the agent client mints them.
#include <cstdint>

namespace dualpath::protocol {

inline uint32_t agent_of(uint64_t request) { return uint32_t((request >> 24) & 0xffffffffu); }
inline uint32_t attempt_of(uint64_t request) { return uint32_t(request >> 56); }
inline uint64_t request_id(uint32_t agent, uint32_t turn, uint32_t attempt = 0) {
  return (uint64_t(attempt & 0xffu) << 56) | (uint64_t(agent) << 24) | turn;
}

}  // namespace dualpath::protocol
