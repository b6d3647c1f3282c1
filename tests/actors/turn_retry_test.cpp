// docs/design.md §13: when a client re-runs its turn after a node was lost, and when a failure is final.
#include <doctest/doctest.h>

#include "actors/turn_retry.hpp"

using dualpath::actors::turn_retry;
using verdict = turn_retry::verdict;

TEST_CASE("turn retry: embedded runs (no grace) fail at once; a named turn is re-run; a failure waits for news") {
  turn_retry r;
  r.new_turn();
  CHECK(r.failed(0) == verdict::fail);  // embedded: unchanged behaviour

  r.new_turn();
  CHECK(r.lost(1, true));  // in flight on the lost node
  r.rerun();
  CHECK(r.attempt == 1);
  CHECK_FALSE(r.lost(1, false));  // the same news again, not named: nothing to do

  // A failure before the launcher's news is held, then re-run when the news comes.
  CHECK(r.failed(3) == verdict::hold);
  CHECK(r.holding);
  CHECK(r.lost(2, false));
  r.rerun();
  CHECK_FALSE(r.holding);

  // A failure after a loss since the attempt was submitted: re-run at once (its pass may have shared a copy).
  r.submitted();
  CHECK(r.lost(3, false) == false);
  CHECK(r.failed(3) == verdict::rerun);
}

TEST_CASE("turn retry: a transient fault is retried at once when embedded, after the grace period otherwise") {
  turn_retry r;
  r.new_turn();
  CHECK(r.failed(0, /*transient*/ true) == verdict::retry);
  r.rerun();
  CHECK(r.failed(3, true) == verdict::hold);  // a dead peer's transfers fail so too: wait for news first
  CHECK(r.expired(true) == verdict::retry);   // no news: it was a fault, retry
  CHECK(r.expired(false) == verdict::fail);
  r.rerun();
  r.lost(1, false);  // news of a loss since the attempt was submitted: a re-run for the loss, not a retry
  CHECK(r.failed(3, true) == verdict::rerun);
  for (uint32_t i = r.attempt; i + 1 < turn_retry::max_attempts; ++i) r.rerun();
  CHECK(r.failed(0, true) == verdict::fail);  // bounded like every re-run
  CHECK(r.expired(true) == verdict::fail);
}

TEST_CASE("turn retry: attempts are bounded, then the failure is final") {
  turn_retry r;
  r.new_turn();
  for (uint32_t i = 1; i < turn_retry::max_attempts; ++i) {
    REQUIRE(r.lost(i, true));
    r.rerun();
  }
  CHECK_FALSE(r.lost(turn_retry::max_attempts, true));
  CHECK(r.failed(3) == verdict::fail);
  r.new_turn();  // the next turn starts afresh
  CHECK(r.attempt == 0);
  CHECK(r.lost(turn_retry::max_attempts + 1, true));
}
