#include <doctest/doctest.h>

#include "core/status.hpp"
#include "transport/arbiter.hpp"
#include "transport/token_bucket.hpp"

using namespace dualpath::transport;

namespace {
// Serves `n` items and counts how many were kv.
int serve_kv(arbiter& arb, int n) {
  int kv = 0;
  for (int i = 0; i < n; ++i) {
    auto item = arb.peek();
    REQUIRE(item);
    kv += item->tc == traffic_class::kv;
    arb.pop();
  }
  return kv;
}
}  // namespace

TEST_CASE("arbiter serves model first and gives kv its byte share while both wait") {
  arbiter arb(true, 0.1);
  for (uint64_t i = 0; i < 1000; ++i) {
    arb.push({traffic_class::kv, i, 1000});
    arb.push({traffic_class::model, 10000 + i, 1000});
  }
  // 10% of the service goes to kv: about 1 in 10 items while model keeps waiting.
  const int kv = serve_kv(arb, 500);
  CHECK(kv >= 45);
  CHECK(kv <= 55);
}

TEST_CASE("arbiter with default share starves kv only as long as model waits") {
  arbiter arb(true, 0.01);
  for (uint64_t i = 0; i < 10; ++i) arb.push({traffic_class::kv, i, 4096});
  for (uint64_t i = 0; i < 50; ++i) arb.push({traffic_class::model, 100 + i, 4096});
  CHECK(serve_kv(arb, 50) == 0);   // 50 model items earn kv half an item's credit
  CHECK(serve_kv(arb, 10) == 10);  // model gone: kv runs
  CHECK(arb.empty());
}

TEST_CASE("arbiter without isolation is one FIFO and push_front keeps the turn") {
  arbiter arb(false, 0.01);
  arb.push({traffic_class::kv, 1, 10});
  arb.push({traffic_class::model, 2, 10});
  CHECK(arb.peek()->id == 1);
  arb.pop();
  arb.push_front({traffic_class::kv, 3, 10});
  CHECK(arb.peek()->id == 3);
  arb.pop();
  CHECK(arb.peek()->id == 2);
}

TEST_CASE("arbiter refuses a kv share outside [0, 1)") {
  CHECK_THROWS_AS(arbiter(true, 1.0), dualpath::user_error);
  CHECK_THROWS_AS(arbiter(true, -0.5), dualpath::user_error);
}

TEST_CASE("token bucket charges whole slices and refuses while in debt") {
  token_bucket bucket(1e6, 1000);  // 1 MB/s
  const auto t0 = token_bucket::clock::now();
  CHECK(bucket.ready(t0));
  bucket.charge(10000);  // 10 ms worth
  CHECK_FALSE(bucket.ready(t0));
  const auto wait = bucket.wait_time(t0);
  CHECK(wait > std::chrono::milliseconds(9));
  CHECK(wait <= std::chrono::milliseconds(11));
  CHECK(bucket.ready(t0 + std::chrono::milliseconds(11)));
  token_bucket open(0, 0);
  CHECK(open.ready(t0));
}

#include "transport/host_buffer.hpp"

TEST_CASE("host buffers are huge-page aligned, zeroed and refuse zero bytes") {
  host_buffer buf(3 << 20);
  CHECK(reinterpret_cast<uintptr_t>(buf.data()) % (2 << 20) == 0);
  CHECK(buf.size() == 3u << 20);
  CHECK(buf.data()[(3 << 20) - 1] == std::byte{0});
  host_buffer moved(std::move(buf));
  CHECK(buf.data() == nullptr);
  CHECK(moved.size() == 3u << 20);
  CHECK_THROWS_AS(host_buffer(0), dualpath::user_error);
}

TEST_CASE("token bucket lets a priority class go ahead of a bounded debt only") {
  token_bucket bucket(1e6, 1000);
  const auto t0 = token_bucket::clock::now();
  bucket.charge(500);
  CHECK_FALSE(bucket.ready(t0));
  CHECK(bucket.ready(t0, 1000));
  bucket.charge(1000);
  CHECK_FALSE(bucket.ready(t0, 1000));
}
