#pragma once
// Agent clients (docs/design.md §11): each replays one trajectory turn by turn (or one Mooncake request),
// submitting each turn to the scheduler and serving its tokens to the PE that was assigned it.
#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <optional>
#include <vector>

#include "actors/vocabulary.hpp"
#include "actors/cluster_view.hpp"
#include "core/trace.hpp"

namespace dualpath::actors {

struct agent_script {
  uint32_t agent = 0;
  std::vector<turn_shape> turns;
  std::optional<std::vector<int32_t>> fixed_prompt;  // Mooncake: the one prompt, from its hash ids
  double start_s = 0;                                // arrival offset (online mode, Mooncake timestamps)
  bool replay_tool_time = false;
  uint32_t verify_every = 0;  // send the prompt of every Nth turn for recompute
  uint64_t seed = 1;
};

// Turns of every script together: what a run has to do.
inline uint64_t turns_total(const std::vector<agent_script>& scripts) {
  uint64_t n = 0;
  for (const auto& s : scripts) n += s.turns.size();
  return n;
}

// Sends (atom::result, envelope<TurnResult>, envelope<TurnPayload>) to `collector` per turn and
// (atom::finish, agent) when the script is done. The payload carries the prompt only for turns to verify.
client_actor spawn_agent_client(caf::actor_system& sys, cluster_view_ptr view, agent_script script,
                                caf::actor collector);

// Deterministic tokens for the 512-token block `id` of a Mooncake trace (equal ids, equal tokens).
std::vector<int32_t> mooncake_tokens(const mooncake_request& r, uint32_t vocab);

}  // namespace dualpath::actors
