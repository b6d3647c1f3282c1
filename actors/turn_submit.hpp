#pragma once
// How a client submits a turn (agent clients and the serving front end's clients alike, docs/design.md §11):
// its hit blocks are looked up now, so a re-run reads what storage holds after a loss (blocks a lost node never
// persisted are misses, recomputed), and a turn no decode engine could ever hold is refused before it queues.
#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <optional>
#include <string>

#include "actors/cluster_view.hpp"
#include "protocol/errors.hpp"
#include "protocol/runtime_codec.hpp"
#include "protocol/waits.hpp"
#include "schedule/policy.hpp"

namespace dualpath::actors {

// Sets t.hit_blocks and submits `t` to the scheduler; or, when it cannot fit any decode engine's HBM, submits
// nothing and returns why.
template <class Self>
std::optional<std::string> submit_turn(Self* self, const cluster_view& view, turn_payload& t) {
  const auto& g = view.geometry;
  const uint32_t hit = uint32_t(view.stored_prefix(block_keys(t.tokens, g.block_tokens)));
  t.hit_blocks = std::min<uint32_t>(hit, uint32_t((t.tokens.size() - 1) / g.block_tokens));
  const auto info = schedule::make_request_info(t.request, t.tokens.size(), t.gen, t.hit_blocks, g);
  if (!view.fits_decode_engine(info.kv_bytes))
    return "turn " + std::to_string(t.turn) + " of agent " + std::to_string(t.agent) + " needs " +
           std::to_string(info.kv_bytes) + " bytes of decode HBM; an engine has " + std::to_string(view.hbm_bytes()) +
           " (hardware.hbm_gb)";
  const uint32_t agent = t.agent, turn = t.turn;
  self->request(view.scheduler, waits_of(view.config).request(), atom::submit_v, encode(info))
      .then([](uint64_t) {},
            [agent, turn](caf::error& err) {
              spdlog::error("agent {}: scheduler refused turn {}: {}", agent, turn, describe(err));
            });
  return std::nullopt;
}

}  // namespace dualpath::actors
