// Prefill engine, EP lockstep (docs/design.md §7.6): under `ep_sync` a pass joins its group's EP round
// before its first layer and waits at every layer for the round's other members. Without ep_sync both are
// no-ops (prefill_pass.cpp calls them unconditionally).
#include <caf/all.hpp>

#include "actors/prefill_state.hpp"
#include "protocol/errors.hpp"

namespace dualpath::actors {

// docs/design.md §7.6: under ep_sync a pass computes nothing before its EP round starts (the hit KV of its
// first layers is fetched meanwhile). The group answers within its own deadlines: at most the remaining
// layers of the round in progress, each `3·timeout_s + 20 ×` the slowest member's layer time; the engine
// waits that for its own pass, twice over.
void prefill_state::ep_join() {
  if (!setup.ep_group) return;
  const double round_s = geo().layers * (3 * view().config.timeout_s + 20 * pass->layer_expected_s);
  ++pass->in_flight;
  watch
      .request(self, setup.ep_group, waits::seconds(view().config.timeout_s + 2 * round_s), atom::join_v, setup.engine,
               pass->layer_expected_s)
      .then(
          [this](double deadline_s) {
            if (!returned()) return;
            pass->ep_deadline_s = deadline_s;
            admitted();
          },
          [this](caf::error& err) {
            if (returned()) abort_pass("EP round not joined: " + describe(err));
          });
}

// The layer ends for this engine when it ended for every member of its round (the MoE all-to-all).
void prefill_state::ep_barrier(uint32_t layer, double attention_s) {
  if (!setup.ep_group) {
    layer_computed(layer);
    return;
  }
  ++pass->in_flight;
  watch
      .request(self, setup.ep_group, waits::seconds(2 * pass->ep_deadline_s), atom::layer_v, setup.engine, layer,
               attention_s)
      .then(
          [this, layer](uint32_t) {
            if (returned()) layer_computed(layer);
          },
          [this, layer](caf::error& err) {
            if (returned()) abort_pass("EP barrier of layer " + std::to_string(layer) + " failed: " + describe(err));
          });
}

}  // namespace dualpath::actors
