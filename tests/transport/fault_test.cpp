// The fault-injection seams "fabric post" and "fabric completion" (core/faults.hpp), driven through
// real endpoint pairs on loopback: an injected error must reach the caller as a failed completion with a
// message, never a hang, and the endpoint must stay usable afterwards.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "tests/transport/transport_helpers.hpp"
#include "core/faults.hpp"

using namespace dualpath::transport;
using namespace dualpath::transport::testing;
using namespace std::chrono_literals;

namespace {

// A pair with 1 MiB buffers and 64 KiB slices, written at the same offset on both sides.
struct pair_rig : buffered_pair {
  explicit pair_rig(const std::string& provider) : buffered_pair(options(provider), 1 << 20) {}
  static fabric_options options(const std::string& provider) {
    auto o = loopback_options(provider);
    o.slice_bytes = 64 << 10;
    return o;
  }
  void write(uint64_t offset, uint64_t length, uint64_t context, std::optional<uint64_t> remote_data = {}) {
    a->write(traffic_class::kv, *src_mr, offset, to_b, dst_mr->remote(), offset, length, context, remote_data);
  }
  // Polls both ends until `n` completions arrived; false instead of a hang.
  bool wait(size_t n, std::vector<completion>& done, std::vector<arrival>* arrived = nullptr) {
    return pump(
        both(), [&] { return done.size() >= n; }, 10s, &done, arrived);
  }
  bool drained() {
    return pump(
        both(), [&] { return !a->busy() && !b->busy(); }, 10s);
  }
};

// Runs `test` on a fresh rig for each provider.
template <class Test>
void for_each_pair(Test test) {
  for (const std::string provider : {"shm", "tcp"}) {
    CAPTURE(provider);
    pair_rig p(provider);
    test(p);
  }
}

std::map<uint64_t, completion> by_context(const std::vector<completion>& done) {
  std::map<uint64_t, completion> out;
  for (const auto& c : done) out[c.context] = c;
  return out;
}

}  // namespace

TEST_CASE("fault registry: armed hits fire once each, then the seam is quiet again") {
  using namespace dualpath::faults;
  const uint64_t before = fired(point::fabric_post);
  CHECK_FALSE(fire(point::fabric_post));
  {
    scoped armed(point::fabric_post, 2);
    CHECK_FALSE(fire(point::fabric_completion));  // the other seam is not affected
    CHECK(fire(point::fabric_post));
    CHECK(fire(point::fabric_post));
    CHECK_FALSE(fire(point::fabric_post));
    arm(point::fabric_post, 5);
  }
  CHECK_FALSE(fire(point::fabric_post));  // disarmed with the scope, hits left over or not
  CHECK(fired(point::fabric_post) == before + 2);
  CHECK(std::string(name(point::fabric_post)) == "fabric_post");
  CHECK(std::string(name(point::fabric_completion)) == "fabric_completion");
}

TEST_CASE("fault \"fabric post\": a refused post fails only its transfer, with the provider's error") {
  for_each_pair([](pair_rig& p) {
    std::vector<completion> done;
    {
      dualpath::faults::scoped armed(dualpath::faults::point::fabric_post, 1);
      p.write(0, 4096, 1);
      p.write(4096, 4096, 2);
      p.write(8192, 4096, 3);
      REQUIRE(p.wait(3, done));
    }
    const auto c = by_context(done);
    CHECK_FALSE(c.at(1).ok);  // the first post of the endpoint took the fault
    CHECK(c.at(1).error.find("injected fault: fabric_post") != std::string::npos);
    CHECK(c.at(1).error.find("fi_write") != std::string::npos);
    CHECK(c.at(2).ok);
    CHECK(c.at(3).ok);
    CHECK(p.a->stats().kv.errors == 1);
    REQUIRE(p.drained());
    // The endpoint and its peer are still usable: a refused post says nothing about the peer.
    p.write(0, 256 << 10, 4);
    REQUIRE(p.wait(4, done));
    CHECK(done.back().ok);
    CHECK(fnv1a(p.dst.ptr, 256 << 10) == fnv1a(p.src.ptr, 256 << 10));
  });
}

TEST_CASE("fault \"fabric post\" in the middle of a multi-slice transfer: no notification, no leftovers") {
  for_each_pair([](pair_rig& p) {
    std::vector<completion> done;
    std::vector<arrival> arrived;
    {
      // The second slice is refused: the transfer fails while its first slice may still be in flight.
      dualpath::faults::scoped armed(dualpath::faults::point::fabric_post, 1,
                                     1);  // the first post goes, the second is refused
      p.write(0, 512 << 10, 1, 77);
      REQUIRE(p.wait(1, done, &arrived));
    }
    CHECK_FALSE(done[0].ok);
    CHECK(done[0].error.find("injected fault: fabric_post") != std::string::npos);
    REQUIRE(p.drained());
    // The remote data was held for the last slice, which is never posted: the peer hears nothing.
    pump(
        {p.a.get(), p.b.get()}, [] { return false; }, 50ms, nullptr, &arrived);
    CHECK(arrived.empty());
    CHECK(p.a->stats().inflight_slices == 0);
    CHECK(p.a->stats().queued_slices == 0);
  });
}

TEST_CASE("fault \"fabric completion\": the transfer fails with the error, the endpoint keeps working") {
  for_each_pair([](pair_rig& p) {
    std::vector<completion> done;
    {
      dualpath::faults::scoped armed(dualpath::faults::point::fabric_completion, 1);
      p.write(0, 4096, 1);
      REQUIRE(p.wait(1, done));
    }
    CHECK_FALSE(done[0].ok);
    CHECK(done[0].error.find("injected fault: fabric_completion") != std::string::npos);
    CHECK(done[0].error.find("write of 4096 bytes to peer") != std::string::npos);
    CHECK(p.a->stats().kv.errors == 1);
    REQUIRE(p.drained());
    // Not a connection error: the peer is not marked dead, so the next transfer goes through.
    p.write(0, 4096, 2);
    REQUIRE(p.wait(2, done));
    CHECK(done[1].ok);
  });
}

TEST_CASE("fault \"fabric completion\" on one slice of many: one error, late completions ignored") {
  for_each_pair([](pair_rig& p) {
    std::vector<completion> done;
    std::vector<arrival> arrived;
    {
      dualpath::faults::scoped armed(dualpath::faults::point::fabric_completion, 1);
      p.write(0, 512 << 10, 1, 88);  // 8 slices, several in flight when the first one "fails"
      p.write(512 << 10, 64 << 10, 2, 89);
      REQUIRE(p.wait(2, done, &arrived));
      CHECK(dualpath::faults::fired(dualpath::faults::point::fabric_completion) >= 1);
    }
    const auto c = by_context(done);
    CHECK(done.size() == 2);
    CHECK_FALSE(c.at(1).ok);
    CHECK(c.at(1).error.find("injected fault: fabric_completion") != std::string::npos);
    CHECK(c.at(2).ok);
    REQUIRE(p.drained());
    // Only the transfer that succeeded notifies the peer.
    pump(
        {p.a.get(), p.b.get()}, [&] { return !arrived.empty(); }, 2s, nullptr, &arrived);
    pump(
        {p.a.get(), p.b.get()}, [] { return false; }, 50ms, nullptr, &arrived);
    REQUIRE(arrived.size() == 1);
    CHECK(arrived[0].data == 89);
    const auto st = p.a->stats();
    CHECK(st.kv.errors == 1);
    CHECK(st.kv.transfers == 2);
    CHECK(st.inflight_slices == 0);
  });
}
