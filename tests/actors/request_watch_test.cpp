// The deadline bookkeeping of actors/request_watch.hpp, apart from any actor.
#include <doctest/doctest.h>

#include <algorithm>

#include "actors/request_watch.hpp"

using dualpath::actors::deadline_book;
using namespace std::chrono_literals;

namespace {

caf::message_id answer(uint64_t n) { return caf::make_message_id(n).response_id(); }

bool has(const std::vector<caf::message_id>& v, caf::message_id id) {
  return std::find(v.begin(), v.end(), id) != v.end();
}

}  // namespace

TEST_CASE("a check is armed for the first deadline and again only for an earlier one") {
  deadline_book b;
  const deadline_book::time_point t0{};
  CHECK(b.add(answer(1), t0 + 10s));
  CHECK_FALSE(b.add(answer(2), t0 + 12s));  // the check at 10 s comes first
  CHECK_FALSE(b.add(answer(3), t0 + 10s));
  CHECK(b.add(answer(4), t0 + 5s));  // earlier: a check at 5 s
  CHECK(b.size() == 4);
}

TEST_CASE("a check takes exactly the answers past their deadline and says when the next is due") {
  deadline_book b;
  const deadline_book::time_point t0{};
  b.add(answer(1), t0 + 10s);
  b.add(answer(2), t0 + 12s);
  b.add(answer(3), t0 + 5s);
  std::optional<deadline_book::time_point> next;
  CHECK(b.take_expired(t0 + 4s, next).empty());  // early: nothing, and the check armed for 5 s stands
  CHECK_FALSE(next);

  auto gone = b.take_expired(t0 + 5s, next);
  CHECK(gone == std::vector<caf::message_id>{answer(3)});
  REQUIRE(next);
  CHECK(*next == t0 + 10s);

  b.remove(answer(1));  // answered: never taken
  gone = b.take_expired(t0 + 10s, next);
  CHECK(gone.empty());
  REQUIRE(next);
  CHECK(*next == t0 + 12s);

  b.add(answer(5), t0 + 11s);  // earlier than the check armed for 12 s
  gone = b.take_expired(t0 + 13s, next);
  CHECK(gone.size() == 2);
  CHECK(has(gone, answer(2)));
  CHECK(has(gone, answer(5)));
  CHECK_FALSE(next);  // nothing left to watch
  CHECK(b.size() == 0);
  CHECK(b.add(answer(6), t0 + 20s));  // an empty book arms again
}

TEST_CASE("a stale check armed for a later time does not stop the next one being armed") {
  deadline_book b;
  const deadline_book::time_point t0{};
  b.add(answer(1), t0 + 100s);  // a check on its way for 100 s
  b.add(answer(2), t0 + 50s);   // and one for 50 s
  std::optional<deadline_book::time_point> next;
  CHECK(b.take_expired(t0 + 50s, next) == std::vector<caf::message_id>{answer(2)});
  REQUIRE(next);  // the check for 100 s is still on its way, but the book re-arms for its earliest
  CHECK(*next == t0 + 100s);
  CHECK(b.take_expired(t0 + 100s, next) == std::vector<caf::message_id>{answer(1)});
  CHECK_FALSE(next);
}
