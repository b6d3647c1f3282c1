// The kv guard of stream providers: next to model traffic, kv goes in guard-sized pieces (one in flight)
// so a model message waits behind at most one piece in the socket; the pieces must still land intact and
// the remote data of a block must still arrive once, after all of its bytes.
#include <doctest/doctest.h>

#include <set>

#include "tests/transport/transport_helpers.hpp"

using namespace dualpath::transport;
using namespace dualpath::transport::testing;
using namespace std::chrono_literals;

namespace {

constexpr int kv_blocks = 8;
constexpr uint64_t block_bytes = 1 << 20;

struct guard_run {
  uint64_t kv_slices = 0;
  uint64_t model_transfers = 0;
  bool intact = false;
  std::set<uint64_t> notified;
  uint64_t notifications = 0;
};

// Writes kv_blocks 1 MiB kv blocks with remote data; with `model`, a 4 KiB model write is kept pending
// the whole time (a new one as soon as the last finished).
guard_run run(const fabric_options& opts, bool model) {
  auto a = endpoint::open(opts);
  auto b = endpoint::open(opts);
  const uint32_t to_b = a->connect(b->address());
  b->connect(a->address());
  const uint64_t model_off = kv_blocks * block_bytes;
  aligned_buffer src(model_off + 4096), dst(model_off + 4096);
  fill_random(src.ptr, src.size, 11);
  std::fill(dst.ptr, dst.ptr + dst.size, std::byte{0});
  auto src_mr = a->register_memory(src.ptr, src.size);
  auto dst_mr = b->register_memory(dst.ptr, dst.size);
  uint64_t next_model = 1000;
  auto send_model = [&] {
    a->write(traffic_class::model, *src_mr, model_off, to_b, dst_mr->remote(), model_off, 4096, next_model++);
  };
  if (model) send_model();  // model first: every kv byte is posted under the guard
  for (int i = 0; i < kv_blocks; ++i) {
    a->write(traffic_class::kv, *src_mr, i * block_bytes, to_b, dst_mr->remote(), i * block_bytes, block_bytes, i,
             static_cast<uint64_t>(i));
  }
  guard_run r;
  int kv_done = 0;
  bool ok = true;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (kv_done < kv_blocks || r.notifications < kv_blocks) {
    if (std::chrono::steady_clock::now() > deadline) FAIL("kv blocks did not finish within 20 s");
    for (const auto& c : a->poll_completions()) {
      ok = ok && c.ok;
      if (c.context >= 1000) {
        if (model && kv_done < kv_blocks) send_model();
      } else {
        kv_done++;
      }
    }
    b->poll_completions();
    for (const auto& arr : b->poll_arrivals()) {
      // Notified only once every byte of that block is in place.
      CHECK(fnv1a(dst.ptr + arr.data * block_bytes, block_bytes) ==
            fnv1a(src.ptr + arr.data * block_bytes, block_bytes));
      r.notified.insert(arr.data);
      r.notifications++;
    }
  }
  REQUIRE(pump(
      {a.get(), b.get()}, [&] { return !a->busy(); }, 10s));
  r.kv_slices = a->stats().kv.slices;
  r.model_transfers = a->stats().model.transfers;
  r.intact = ok && fnv1a(dst.ptr, model_off) == fnv1a(src.ptr, model_off);
  return r;
}

fabric_options base(const std::string& provider) {
  fabric_options o;
  o.provider = provider;
  o.timeout = 2000ms;
  o.slice_bytes = block_bytes;
  o.model_guard = std::chrono::seconds(10);  // the guard never lapses between two model writes here
  return o;
}

}  // namespace

TEST_CASE("tcp: next to model traffic kv goes in guard-sized pieces, intact and notified once") {
  auto opts = base("tcp");
  opts.kv_guard_bytes = 64 << 10;
  const auto r = run(opts, true);
  CHECK(r.intact);
  CHECK(r.notifications == kv_blocks);
  CHECK(r.notified.size() == kv_blocks);
  CHECK(r.kv_slices == kv_blocks * (block_bytes / (64 << 10)));
  CHECK(r.model_transfers > 1);  // model kept going while kv drained: kv was not starved either
}

TEST_CASE("kv keeps whole slices without model traffic, without isolation, and on shm by default") {
  SUBCASE("tcp, no model traffic") {
    const auto r = run(base("tcp"), false);
    CHECK(r.intact);
    CHECK(r.notifications == kv_blocks);
    CHECK(r.kv_slices == kv_blocks);
  }
  SUBCASE("tcp, isolation off") {
    auto opts = base("tcp");
    opts.isolation = false;
    const auto r = run(opts, true);
    CHECK(r.intact);
    CHECK(r.kv_slices == kv_blocks);
  }
  SUBCASE("shm: its slices are copies on the polling thread, no stream to queue in") {
    const auto r = run(base("shm"), true);
    CHECK(r.intact);
    CHECK(r.notifications == kv_blocks);
    CHECK(r.kv_slices == kv_blocks);
  }
}
