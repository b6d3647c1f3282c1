#pragma once
// What an agent client does with its turn in flight when nodes are lost (docs/design.md §13). Plain C++, so
// the rule is tested without actors (tests/actors/turn_retry_test.cpp). A turn named by the launcher as in
// flight on a lost node is re-run at once; a turn that fails after a loss is re-run too (its pass may have
// shared a copy with the lost node); a failure before any news is held for a grace period, because the
// engines notice a dead peer (a refused load, a failed copy) sooner than the launcher's monitors may. A
// transient failure (a KV transfer's error completion) is retried: at once in an embedded run, after the
// grace period without news of a loss in a multi-process one (a dead peer's transfers fail like that too, and
// retrying before the loss is known would spend the attempts on the dead node).
#include "actors/vocabulary.hpp"
#include <algorithm>
#include <cstdint>

namespace dualpath::actors {

struct turn_retry {
  static constexpr uint32_t max_attempts = 8;  // attempt numbers fit the request id's 8 bits with room
  // rerun: because of a lost node; retry: because of a transient fault; hold: wait for news; fail: final.
  enum class verdict : uint8_t { rerun, retry, hold, fail };

  uint32_t attempt = 0;           // of the current turn
  uint32_t losses = 0;            // nodes lost so far, as the launcher said
  uint32_t losses_at_submit = 0;  // ... when the current attempt was submitted
  bool holding = false;           // the current attempt failed and waits for news of a loss

  void new_turn() { attempt = 0, submitted(); }
  void submitted() { losses_at_submit = losses, holding = false; }
  void rerun() { ++attempt, submitted(); }
  bool can_rerun() const { return attempt + 1 < max_attempts; }

  // The current attempt failed (`transient`: a KV transfer's error); grace_s > 0 where a lost node may
  // still be announced (multi-process runs).
  verdict failed(double grace_s, bool transient = false) {
    if (!can_rerun()) return verdict::fail;
    if (grace_s <= 0) return transient ? verdict::retry : verdict::fail;
    if (losses > losses_at_submit) return verdict::rerun;
    holding = true;
    return verdict::hold;
  }
  // A held failure's grace period ended with no news of a loss.
  verdict expired(bool transient) const { return transient && can_rerun() ? verdict::retry : verdict::fail; }
  // The launcher: `total` nodes lost so far; `named`: the current attempt was in flight on the latest one.
  // True: re-run the current turn now.
  bool lost(uint32_t total, bool named) {
    losses = std::max(losses, total);
    return (named || holding) && can_rerun();
  }
};

}  // namespace dualpath::actors
