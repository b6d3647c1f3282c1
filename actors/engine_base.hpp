#pragma once
// What the prefill and decode engine states share: their actor, their setup and the lookups they make.
#include <caf/send.hpp>
#include <caf/timespan.hpp>
#include <spdlog/spdlog.h>

#include <chrono>

#include "actors/engines.hpp"
#include "actors/runtime_messages.hpp"

namespace dualpath::actors {

struct engine_base {
  engine_actor::pointer self = nullptr;
  engine_setup setup;
  gpu::hbm_arena* hbm = nullptr;

  void bind(engine_actor::pointer s, engine_setup st) {
    self = s;
    setup = std::move(st);
    hbm = &setup.io->hbm(setup.engine);
  }
  const cluster_view& view() const { return *setup.view; }
  const runtime::kv_geometry& geo() const { return setup.view->geometry; }
  uint32_t node() const { return view().node_of(setup.engine); }
  // Tells the agent client that its turn failed, and why (the run reports it; nothing waits forever).
  void answer_failure(const turn_payload& p, const std::string& why) {
    spdlog::error("engine {}: request {:x}: {}", setup.engine, p.request, why);
    self->send(view().clients.at(p.agent), atom::result_v, encode(failed_turn(p, why)));
  }
  // Every request to another actor waits at most this long.
  caf::timespan timeout() const {
    return std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(view().config.timeout_s));
  }
};

}  // namespace dualpath::actors
