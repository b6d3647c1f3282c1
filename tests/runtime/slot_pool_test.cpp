// The DRAM buffer's slot pool: FIFO grants, a head that holds back smaller requests, deadlines, and the
// request that can never fit. Time is passed in, so nothing here depends on the machine's speed.
#include <doctest/doctest.h>

#include <optional>

#include "runtime/slot_pool.hpp"

using namespace dualpath;
using namespace dualpath::runtime;
using namespace std::chrono_literals;

namespace {
struct outcome {
  std::optional<result<std::vector<uint32_t>>> r;
  slot_pool::done_fn fn() {
    return [this](result<std::vector<uint32_t>> x) { r.emplace(std::move(x)); };
  }
};
}  // namespace

TEST_CASE("slot pool: grants in FIFO order; the head waits and holds back smaller requests behind it") {
  slot_pool pool(3, 4, 1000ms);
  const auto t0 = slot_pool::clock::now();
  outcome a, b, c;
  pool.reserve(3, a.fn(), t0);
  pool.reserve(3, b.fn(), t0);
  pool.reserve(1, c.fn(), t0);
  CHECK(pool.progress(t0));
  REQUIRE(a.r);
  CHECK(a.r->value().size() == 3);
  CHECK_FALSE(b.r);
  CHECK_FALSE(c.r);  // one slot is free, but b is ahead of it
  CHECK(pool.free_slots() == 1);
  pool.release(a.r->value());
  CHECK(pool.progress(t0 + 1ms));
  REQUIRE(b.r);
  REQUIRE(c.r);
  CHECK(b.r->value().size() == 3);
  CHECK(c.r->value().size() == 1);
  CHECK(pool.free_slots() == 0);
  CHECK(pool.low_water() == 0);
}

TEST_CASE("slot pool: a request larger than the buffer fails at once; a wait past the deadline times out") {
  slot_pool pool(7, 2, 100ms);
  outcome big;
  pool.reserve(3, big.fn());
  REQUIRE(big.r);
  CHECK(big.r->error().code() == errc::capacity);
  CHECK(big.r->error().message().find("node 7 holds 2") != std::string::npos);

  const auto t0 = slot_pool::clock::now();
  outcome held, waiting;
  pool.reserve(2, held.fn(), t0);
  pool.progress(t0);
  pool.reserve(1, waiting.fn(), t0);
  CHECK_FALSE(pool.progress(t0 + 50ms));
  CHECK(pool.waiting() == 1);
  CHECK(pool.progress(t0 + 101ms));
  REQUIRE(waiting.r);
  CHECK(waiting.r->error().code() == errc::timeout);
  CHECK(pool.waiting() == 0);
}
