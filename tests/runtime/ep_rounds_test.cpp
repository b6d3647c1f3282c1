// runtime/ep_rounds: who is in an expert-parallel round, when a layer may proceed, and the attention
// max/avg of each round (docs/design.md §7.6, §15).
#include <doctest/doctest.h>

#include <algorithm>

#include "runtime/ep_rounds.hpp"

using namespace dualpath::runtime;

namespace {
using ids = std::vector<uint32_t>;
bool has(const ids& v, uint32_t e) { return std::find(v.begin(), v.end(), e) != v.end(); }
}  // namespace

TEST_CASE("ep rounds: a layer ends for every member together, and the round's max/avg is over the group") {
  ep_rounds r(4, 2);
  auto a = r.join(0, 0.1, 100);
  CHECK(a.round_started);
  CHECK(a.admitted == ids{0});
  // A second engine asking while the round runs waits for the next one.
  a = r.join(1, 0.1, 110);
  CHECK(a.admitted.empty());
  CHECK(r.waiting(1));
  a = r.arrive(0, 0, 0.3, 120);
  CHECK(a.released == ids{0});
  CHECK(a.layer_opened);
  a = r.arrive(0, 1, 0.5, 130);
  CHECK(a.released == ids{0});
  // The round ended; the next waits for engine 0 (joining again or idle), so busy engines step together.
  CHECK(a.gathering);
  CHECK(a.admitted.empty());
  a = r.join(0, 0.1, 140);
  CHECK(a.round_started);
  CHECK(a.admitted == ids{0, 1});
  REQUIRE(r.records().size() == 1);
  CHECK(r.records()[0].members == 1);
  CHECK(r.records()[0].max_s == doctest::Approx(0.8));
  // Idle engines of the group count 0: one busy engine of four is max/avg 4.
  CHECK(r.records()[0].max_over_avg() == doctest::Approx(4.0));
  CHECK(r.records()[0].start_ns == 100);
}

TEST_CASE("ep rounds: the slowest member holds the layer") {
  ep_rounds s(3, 2);
  s.join(0, 0.1, 0);
  s.join(1, 0.1, 0);  // 0 started alone; 1 and 2 wait
  s.join(2, 0.3, 0);
  s.join(2, 0.3, 0);  // a repeat is ignored
  s.arrive(0, 0, 0.1, 1);
  auto a = s.arrive(0, 1, 0.1, 2);
  CHECK(a.admitted.empty());
  a = s.idle(0, 3);  // engine 0 has no next pass: the round of 1 and 2 starts without it
  CHECK(a.admitted == ids{1, 2});
  CHECK(s.max_layer_s() == doctest::Approx(0.3));
  a = s.arrive(2, 0, 0.3, 3);
  CHECK(a.released.empty());   // engine 1 has not finished layer 0
  a = s.arrive(2, 0, 0.3, 3);  // not counted twice: refused
  CHECK(a.dropped == ids{2});
  a = s.arrive(1, 0, 0.1, 4);
  CHECK(has(a.released, 1));
  CHECK(has(a.released, 2));
  s.arrive(1, 1, 0.1, 5);
  a = s.arrive(2, 1, 0.3, 6);
  REQUIRE(s.records().size() == 2);
  CHECK(s.records()[1].members == 2);
  CHECK(s.records()[1].max_over_avg() == doctest::Approx(0.6 / (0.8 / 3)));
  CHECK_FALSE(s.running());
  a = s.arrive(0, 0, 0.1, 7);  // not in a round: refused, not waited for
  CHECK(a.dropped == ids{0});
}

TEST_CASE("ep rounds: a member that leaves or misses a deadline never blocks the others") {
  ep_rounds r(3, 3);
  r.join(0, 0.1, 0);
  r.join(1, 0.1, 0);  // waits for round 2
  r.arrive(0, 0, 0.1, 1);
  r.arrive(0, 1, 0.1, 2);
  // engine 0's pass fails in layer 2: no member is left, the round ends without a record, and the
  // waiting engine starts at once (a member that left is not waited for).
  auto a = r.leave(0, 3);
  CHECK(a.admitted == ids{1});
  CHECK(r.records().empty());
  CHECK(r.round() == 2);

  r.join(2, 0.1, 4);  // waits for round 3
  r.leave(2, 5);      // and gives up: out of the queue
  CHECK_FALSE(r.waiting(2));

  // Deadline: engine 1 never reports layer 0; another layer's deadline does nothing, its own drops it.
  a = r.expire(2, 1, 6);
  CHECK(a.dropped.empty());
  a = r.expire(2, 0, 7);
  CHECK(a.dropped == ids{1});
  CHECK_FALSE(r.running());
  CHECK(r.dropped_members() == 1);
  // Its late report is refused, so its own wait fails instead of hanging.
  a = r.arrive(1, 0, 0.1, 8);
  CHECK(a.dropped == ids{1});
}

TEST_CASE("ep rounds: the gather after a round has a deadline too") {
  ep_rounds r(2, 1);
  r.join(0, 0.1, 0);
  r.join(1, 0.1, 0);
  auto a = r.arrive(0, 0, 0.1, 1);
  CHECK(a.gathering);     // engine 0 neither joins nor says idle
  a = r.expire(1, 0, 2);  // not the gather's deadline (layer 1 == layers is)
  CHECK(a.admitted.empty());
  a = r.expire(1, 1, 3);
  CHECK(a.admitted == ids{1});
}

TEST_CASE("ep rounds: a dropped member's attention still counts in the round it was in") {
  ep_rounds s(2, 2);
  s.join(0, 0.1, 0);
  s.join(1, 0.1, 0);
  s.join(2, 0.1, 0);
  s.arrive(0, 0, 0.1, 1);
  s.arrive(0, 1, 0.1, 1);
  s.idle(0, 1);  // round 2: engines 1 and 2
  s.arrive(1, 0, 0.2, 2);
  s.arrive(2, 0, 0.6, 2);
  s.leave(2, 3);                    // 2 fails in layer 1
  auto a = s.arrive(1, 1, 0.2, 4);  // 1 finishes alone
  CHECK(a.released == ids{1});
  REQUIRE(s.records().size() == 2);
  CHECK(s.records()[1].members == 2);
  CHECK(s.records()[1].max_s == doctest::Approx(0.6));
  CHECK(s.records()[1].max_over_avg() == doctest::Approx(0.6 / 0.5));
}
