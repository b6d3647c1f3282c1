#pragma once
// The rule of actors/turn_retry.hpp as a client actor applies it to its turn in flight (docs/design.md §13,
// §18): the agent clients of a run and the serving clients of `dualpath serve` alike. A client state `C` has
//   retry (turn_retry), held (std::optional<envelope<schema::TurnResult>>), in_flight, current (its payload),
//   view (cluster_view_ptr), self (its actor),
//   rerun(why, rerun_cause): the current turn again under the next attempt, and
//   finish(envelope, turn_result): the turn is over with this result.
#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "actors/turn_retry.hpp"
#include "actors/vocabulary.hpp"
#include "protocol/runtime_codec.hpp"

namespace dualpath::actors {

// Why a turn runs again: a lost node (it moves off the node), or a transient fault (it is retried).
enum class rerun_cause : uint8_t { node_lost, fault };

// The current attempt failed with `r`: re-run it, hold the failure for the grace period (news of a lost node
// may come), or finish with it.
template <class C>
void on_failed_attempt(C& c, const envelope<schema::TurnResult>& e, const turn_result& r) {
  switch (c.retry.failed(c.view->node_loss_grace_s, r.failure == failure_kind::transient)) {
    case turn_retry::verdict::rerun: return c.rerun("failed after a node was lost: " + r.error, rerun_cause::node_lost);
    case turn_retry::verdict::retry: return c.rerun("a transient fault: " + r.error, rerun_cause::fault);
    case turn_retry::verdict::hold: {
      c.held = e;
      const auto grace =
          std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(c.view->node_loss_grace_s));
      c.self->delayed_send(c.self, grace, atom::expire_v, c.current.request);
      return;
    }
    case turn_retry::verdict::fail: return c.finish(e, r);
  }
}

// The launcher: `losses` nodes lost so far, `requests` (sorted) in flight on the latest.
template <class C>
void on_lost_nodes(C& c, uint32_t losses, const std::vector<uint64_t>& requests) {
  const bool named = c.in_flight && std::binary_search(requests.begin(), requests.end(), c.current.request);
  if (c.retry.lost(losses, named) && c.in_flight)
    c.rerun(named ? "in flight on a lost node" : "failed as a node was lost", rerun_cause::node_lost);
}

// The grace period of the failure held for `request` ended without news of a loss.
template <class C>
void on_hold_expired(C& c, uint64_t request) {
  if (!c.in_flight || request != c.current.request || !c.retry.holding || !c.held) return;
  const auto e = std::move(*c.held);  // finish() resets `held`: it must not answer from it
  c.held.reset();
  const auto r = decode(e);
  if (c.retry.expired(r.failure == failure_kind::transient) == turn_retry::verdict::retry)
    return c.rerun("a transient fault: " + r.error, rerun_cause::fault);
  c.finish(e, r);
}

}  // namespace dualpath::actors
