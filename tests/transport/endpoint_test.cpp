// Real libfabric endpoints (shm and tcp) in one process: integrity, remote data, loopback, reads,
// rate cap, class priority and error paths.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <map>
#include <set>

#include "core/status.hpp"
#include "tests/transport/transport_helpers.hpp"

using namespace dualpath::transport;
using namespace dualpath::transport::testing;
using namespace std::chrono_literals;

TEST_CASE("thousands of random-size Layer Blocks arrive intact, each notified once") {
  for (const std::string provider : {"shm", "tcp"}) {
    CAPTURE(provider);
    auto opts = loopback_options(provider);
    opts.slice_bytes = 8 << 10;  // most blocks span several slices
    opts.max_inflight = 16;
    endpoint_pair p(opts);
    const size_t source_bytes = 1 << 20;
    const int blocks = 2000;
    aligned_buffer src(source_bytes), dst(blocks * (32 << 10));
    fill_random(src.ptr, source_bytes, 42);
    std::fill(dst.ptr, dst.ptr + dst.size, std::byte{0});
    auto src_mr = p.a->register_memory(src.ptr, src.size);
    auto dst_mr = p.b->register_memory(dst.ptr, dst.size);

    struct block {
      uint64_t src_off, dst_off, len, sum;
    };
    std::vector<block> plan;
    std::mt19937_64 rng(7);
    uint64_t dst_off = 0;
    for (int i = 0; i < blocks; ++i) {
      const uint64_t len = 1 + rng() % (32 << 10);
      const uint64_t off = rng() % (source_bytes - len);
      plan.push_back({off, dst_off, len, fnv1a(src.ptr + off, len)});
      dst_off += (len + 7) / 8 * 8;
    }
    for (int i = 0; i < blocks; ++i) {
      const auto& b = plan[i];
      p.a->write(traffic_class::kv, *src_mr, b.src_off, p.to_b, dst_mr->remote(), b.dst_off, b.len, i, 1000 + i);
    }
    std::vector<completion> done;
    std::vector<arrival> arrived;
    std::map<uint64_t, int> seen;
    int verified = 0;
    const bool finished = pump(
        p.both(),
        [&] {
          // Verify each block when its notification arrives: the data must already be there.
          for (auto& a : arrived) {
            REQUIRE(a.data >= 1000);
            const auto& b = plan.at(a.data - 1000);
            if (++seen[a.data] == 1 && fnv1a(dst.ptr + b.dst_off, b.len) == b.sum) verified++;
          }
          arrived.clear();
          return done.size() == static_cast<size_t>(blocks) && seen.size() == static_cast<size_t>(blocks);
        },
        30s, &done, &arrived);
    REQUIRE(finished);
    CHECK(verified == blocks);
    CHECK(std::all_of(done.begin(), done.end(), [](const completion& c) { return c.ok; }));
    std::set<uint64_t> contexts;
    for (auto& c : done) contexts.insert(c.context);
    CHECK(contexts.size() == static_cast<size_t>(blocks));
    CHECK(std::all_of(seen.begin(), seen.end(), [](auto& kv) { return kv.second == 1; }));
    // Nothing else arrives later: every notification came exactly once.
    pump(
        p.both(), [] { return false; }, 50ms, nullptr, &arrived);
    CHECK(arrived.empty());
    const auto st = p.a->stats();
    CHECK(st.kv.transfers == static_cast<uint64_t>(blocks));
    CHECK(st.kv.errors == 0);
    CHECK(p.b->stats().arrivals == static_cast<uint64_t>(blocks));
  }
}

TEST_CASE("loopback copies and reads go through the endpoint itself") {
  for (const std::string provider : {"shm", "tcp"}) {
    CAPTURE(provider);
    auto opts = loopback_options(provider);
    opts.slice_bytes = 64 << 10;
    auto ep = endpoint::open(opts);
    const uint32_t self = ep->connect(ep->address());
    aligned_buffer dram(1 << 20), hbm(1 << 20), back(1 << 20);
    fill_random(dram.ptr, dram.size, 3);
    std::fill(hbm.ptr, hbm.ptr + hbm.size, std::byte{0});
    auto dram_mr = ep->register_memory(dram.ptr, dram.size);
    auto hbm_mr = ep->register_memory(hbm.ptr, hbm.size);
    auto back_mr = ep->register_memory(back.ptr, back.size);
    ep->write(traffic_class::kv, *dram_mr, 0, self, hbm_mr->remote(), 0, dram.size, 1, 77);
    std::vector<completion> done;
    std::vector<arrival> arrived;
    REQUIRE(pump(
        {ep.get()}, [&] { return done.size() == 1 && arrived.size() == 1; }, 10s, &done, &arrived));
    CHECK(done[0].ok);
    CHECK(arrived[0].data == 77);
    CHECK((arrived[0].bytes == 64u << 10 || arrived[0].bytes == 0));  // tcp does not report the length
    CHECK(fnv1a(hbm.ptr, hbm.size) == fnv1a(dram.ptr, dram.size));
    // A read pulls the bytes back into a third region.
    ep->read(traffic_class::model, *back_mr, 0, self, hbm_mr->remote(), 0, hbm.size, 2);
    REQUIRE(pump(
        {ep.get()}, [&] { return done.size() == 2; }, 10s, &done));
    CHECK(done[1].ok);
    CHECK(fnv1a(back.ptr, back.size) == fnv1a(dram.ptr, dram.size));
    CHECK(ep->stats().model.bytes == back.size);
  }
}

// A loaded machine can only make the link slower, so the cap's upper side is what a test can hold; how
// close to the cap it runs is `dualpath bench transport`'s to measure.
TEST_CASE("rate cap is never exceeded") {
  auto opts = loopback_options("shm");
  opts.rate_gb_per_s = 0.04;  // 40 MB/s: the provider is >50x faster, so the cap decides
  opts.slice_bytes = 256 << 10;
  const size_t bytes = 8 << 20;
  buffered_pair p(opts, bytes);
  std::vector<completion> done;
  const auto t0 = std::chrono::steady_clock::now();
  // Mixed classes: model may go ahead of the kv debt, but every byte is charged to the one link.
  for (int i = 0; i < 8; ++i) {
    const auto tc = i % 4 == 3 ? traffic_class::model : traffic_class::kv;
    p.a->write(tc, *p.src_mr, i << 20, p.to_b, p.dst_mr->remote(), i << 20, 1 << 20, i);
  }
  REQUIRE(pump(
      p.both(), [&] { return done.size() == 8; }, 20s, &done));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double gb_per_s = bytes / secs / 1e9;
  CAPTURE(gb_per_s);
  CHECK(gb_per_s <= opts.rate_gb_per_s * 1.10);
}

TEST_CASE("kv keeps its share while model traffic keeps waiting") {
  auto opts = loopback_options("shm");
  opts.kv_share = 0.2;  // one kv slice per four model slices while both wait
  opts.slice_bytes = 16 << 10;
  opts.max_inflight = 1;
  buffered_pair p(opts, 1 << 20);
  for (int i = 0; i < 40; ++i) {
    p.a->write(traffic_class::model, *p.src_mr, 0, p.to_b, p.dst_mr->remote(), 0, 16 << 10, 100 + i);
  }
  for (int i = 0; i < 5; ++i) {
    p.a->write(traffic_class::kv, *p.src_mr, 0, p.to_b, p.dst_mr->remote(), 1 << 19, 16 << 10, i);
  }
  std::vector<completion> done;
  REQUIRE(pump(
      p.both(), [&] { return done.size() == 45; }, 10s, &done));
  // All five kv blocks finish while model blocks are still waiting (about every fifth slot).
  const auto last_kv = std::find_if(done.rbegin(), done.rend(), [](auto& c) { return c.context < 100; });
  const auto last_kv_pos = done.rend() - last_kv - 1;
  CAPTURE(last_kv_pos);
  CHECK(last_kv_pos < 30);
  CHECK(last_kv_pos >= 20);
}

TEST_CASE("poll_delay reports the rate cap's wait and idleness") {
  auto opts = loopback_options("shm");
  // 100 KB/s: the second 64 KiB slice waits about 655 ms, far longer than a slow (sanitized, loaded) machine
  // takes between the first completion and the question.
  opts.rate_gb_per_s = 0.0001;
  opts.slice_bytes = 64 << 10;
  buffered_pair p(opts, 1 << 20);
  CHECK_FALSE(p.a->poll_delay().has_value());
  p.a->write(traffic_class::kv, *p.src_mr, 0, p.to_b, p.dst_mr->remote(), 0, 128 << 10, 1);
  std::vector<completion> done;
  // The first slice goes at once; then only the cap holds the second back.
  REQUIRE(pump(
      p.both(), [&] { return p.a->stats().kv.slices == 1; }, 10s, &done));
  const auto delay = p.a->poll_delay();
  REQUIRE(delay.has_value());
  CHECK(*delay > std::chrono::milliseconds(100));
  CHECK(*delay <= std::chrono::milliseconds(660));
}

TEST_CASE("model traffic overtakes queued kv traffic only with isolation on") {
  for (const bool isolation : {true, false}) {
    CAPTURE(isolation);
    auto opts = loopback_options("shm");
    opts.isolation = isolation;
    opts.slice_bytes = 64 << 10;
    opts.max_inflight = 2;
    buffered_pair p(opts, 4 << 20);
    const int kv_blocks = 64;
    for (int i = 0; i < kv_blocks; ++i) {
      p.a->write(traffic_class::kv, *p.src_mr, i << 16, p.to_b, p.dst_mr->remote(), i << 16, 64 << 10, i);
    }
    p.a->write(traffic_class::model, *p.src_mr, 0, p.to_b, p.dst_mr->remote(), 0, 4096, 999);
    std::vector<completion> done;
    REQUIRE(pump(
        p.both(), [&] { return done.size() == kv_blocks + 1; }, 10s, &done));
    const auto pos = std::find_if(done.begin(), done.end(), [](auto& c) { return c.context == 999; }) - done.begin();
    if (isolation) {
      CHECK(pos <= 2);  // only kv slices already posted finish before it
    } else {
      CHECK(pos == kv_blocks);  // one FIFO: it waits behind every kv block
    }
  }
}

TEST_CASE("out-of-range transfers, unknown peers and bad keys give error completions") {
  for (const std::string provider : {"shm", "tcp"}) {
    CAPTURE(provider);
    buffered_pair p(loopback_options(provider), 64 << 10);
    p.a->write(traffic_class::kv, *p.src_mr, 0, p.to_b, p.dst_mr->remote(), 60 << 10, 8 << 10, 1);
    p.a->write(traffic_class::kv, *p.src_mr, 64 << 10, p.to_b, p.dst_mr->remote(), 0, 1, 2);
    p.a->write(traffic_class::kv, *p.src_mr, 0, 17, p.dst_mr->remote(), 0, 1024, 3);
    p.a->write(traffic_class::kv, *p.dst_mr, 0, p.to_b, p.dst_mr->remote(), 0, 1024, 5);  // b's region on a
    auto bad_key = p.dst_mr->remote();
    bad_key.key += 0x5a5a;
    p.a->write(traffic_class::kv, *p.src_mr, 0, p.to_b, bad_key, 0, 32 << 10, 4, 5);
    std::vector<completion> done;
    REQUIRE(pump(
        p.both(), [&] { return done.size() == 5; }, 10s, &done));
    std::map<uint64_t, completion> by_context;
    for (auto& c : done) by_context[c.context] = c;
    CHECK_FALSE(by_context[1].ok);
    CHECK(by_context[1].error.find("remote range") != std::string::npos);
    CHECK_FALSE(by_context[2].ok);
    CHECK(by_context[2].error.find("local range") != std::string::npos);
    CHECK_FALSE(by_context[3].ok);
    CHECK(by_context[3].error.find("unknown peer 17") != std::string::npos);
    CHECK_FALSE(by_context[4].ok);
    CHECK_FALSE(by_context[5].ok);
    CHECK(by_context[5].error.find("another endpoint") != std::string::npos);
    CHECK(p.a->stats().kv.errors == 5);
  }
}

TEST_CASE("a gathered write lands its pieces in order in one range; too many, too large or outside: error") {
  for (const std::string provider : {"shm", "tcp"}) {
    CAPTURE(provider);
    auto opts = loopback_options(provider);
    opts.slice_bytes = 64 << 10;
    buffered_pair p(opts, 256 << 10);
    // shm gathers as many as its iov limit (4); tcp cuts kv next to model traffic, so it gathers nothing.
    const uint32_t limit = p.a->gather_limit();
    CHECK(limit == (provider == "shm" ? 4u : 1u));
    std::vector<gather_piece> pieces;
    for (uint32_t k = 0; k < limit; ++k) pieces.push_back({(200u << 10) - k * (40u << 10), 8u << 10});
    p.a->write_gather(traffic_class::kv, *p.src_mr, pieces, p.to_b, p.dst_mr->remote(), 4096, 1);
    std::vector<gather_piece> too_many(limit + 1, gather_piece{0, 1024});
    p.a->write_gather(traffic_class::kv, *p.src_mr, too_many, p.to_b, p.dst_mr->remote(), 0, 2);
    p.a->write_gather(traffic_class::kv, *p.src_mr, {{0, 65 << 10}}, p.to_b, p.dst_mr->remote(), 0, 3);
    p.a->write_gather(traffic_class::kv, *p.src_mr, {{250 << 10, 8 << 10}}, p.to_b, p.dst_mr->remote(), 0, 4);
    std::vector<completion> done;
    REQUIRE(pump(
        p.both(), [&] { return done.size() == 4; }, 10s, &done));
    std::map<uint64_t, completion> by_context;
    for (auto& c : done) by_context[c.context] = c;
    CHECK(by_context[1].ok);
    for (uint32_t k = 0; k < limit; ++k)
      CHECK(std::equal(p.dst.ptr + 4096 + k * (8 << 10), p.dst.ptr + 4096 + (k + 1) * (8 << 10),
                       p.src.ptr + pieces[k].offset));
    CHECK(p.dst.ptr[4095] == std::byte{0});
    CHECK(p.dst.ptr[4096 + limit * (8 << 10)] == std::byte{0});
    CHECK(by_context[2].error.find("pieces to gather") != std::string::npos);
    CHECK(by_context[3].error.find("over the") != std::string::npos);
    CHECK(by_context[4].error.find("local piece") != std::string::npos);
    CHECK(p.a->stats().kv.errors == 3);
  }
}

TEST_CASE("a closed peer yields an error completion within the timeout") {
  for (const std::string provider : {"shm", "tcp"}) {
    CAPTURE(provider);
    auto opts = loopback_options(provider);
    opts.timeout = 300ms;
    buffered_pair p(opts, 64 << 10);
    const auto remote = p.dst_mr->remote();
    // One good transfer first, so the peer is known to be alive and connected.
    std::vector<completion> done;
    p.a->write(traffic_class::kv, *p.src_mr, 0, p.to_b, remote, 0, 4096, 1);
    REQUIRE(pump(
        p.both(), [&] { return done.size() == 1; }, 10s, &done));
    REQUIRE(done[0].ok);
    p.dst_mr.reset();
    p.b.reset();
    for (int i = 0; i < 4; ++i) p.a->write(traffic_class::kv, *p.src_mr, 0, p.to_b, remote, 0, 32 << 10, 10 + i);
    // Bounded by the timeout (plus slack for a loaded machine), never a hang.
    REQUIRE(pump(
        {p.a.get()}, [&] { return done.size() == 5; }, 5s, &done));
    for (size_t i = 1; i < done.size(); ++i) {
      CHECK_FALSE(done[i].ok);
      CHECK_FALSE(done[i].error.empty());
    }
  }
}

TEST_CASE("registration refuses zero-length and unaligned regions with a clear message") {
  auto ep = endpoint::open(loopback_options("shm"));
  aligned_buffer buf(4096);
  CHECK_THROWS_WITH_AS(ep->register_memory(buf.ptr, 0), doctest::Contains("zero-length"), dualpath::user_error);
  CHECK_THROWS_WITH_AS(ep->register_memory(buf.ptr + 3, 64), doctest::Contains("not 8-byte aligned"),
                       dualpath::user_error);
  CHECK_THROWS_WITH_AS(ep->register_memory(nullptr, 64), doctest::Contains("null"), dualpath::user_error);
}

TEST_CASE("an unknown provider is refused by name") {
  fabric_options o;
  o.provider = "no-such-provider";
  CHECK_THROWS_WITH_AS(endpoint::open(o), doctest::Contains("no-such-provider"), dualpath::user_error);
}

// Writes a -> b on a thread of its own while this thread holds one slot of the pair's provider lock: b's
// region's, or (`hold_other`) one that is neither endpoint's. True when the write finished within 300 ms; its
// bytes must land intact either way once the slot is let go.
namespace {
bool write_while_held(const fabric_options& opts, bool hold_other) {
  buffered_pair p(opts, 256 << 10);
  const uint32_t a = call_lock_slot(p.a->address()), b = call_lock_slot(p.b->address());
  uint32_t slot = b;
  if (hold_other)
    for (slot = 0; slot == a || slot == b;) ++slot;
  std::atomic<bool> finished{false};
  bool landed = false;
  held_call held(opts.provider_lock.get(), slot);
  std::thread writer([&] {
    p.a->write(traffic_class::kv, *p.src_mr, 0, p.to_b, p.dst_mr->remote(), 0, p.src.size, 1);
    std::vector<completion> done;
    landed = pump(
                 p.both(), [&] { return done.size() == 1; }, 10s, &done) &&
             done[0].ok;
    finished = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + 300ms;
  while (!finished && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  const bool in_time = finished.load();
  held.unlock();
  writer.join();
  CHECK(landed);
  CHECK(fnv1a(p.dst.ptr, p.dst.size) == fnv1a(p.src.ptr, p.src.size));
  return in_time;
}
}  // namespace

TEST_CASE("endpoints sharing a provider lock: shm posts wait for the target region's lock, tcp ignores it") {
  for (const std::string provider : {"shm", "tcp"}) {
    CAPTURE(provider);
    auto opts = loopback_options(provider);
    opts.provider_lock = make_process_call_lock();
    // The writer's post to b takes b's region's lock: on shm it waits while that is held.
    CHECK(write_while_held(opts, false) == (provider != "shm"));
    // Another region's lock held: nothing the pair calls waits for it.
    CHECK(write_while_held(opts, true));
  }
}

TEST_CASE("shm copies to a peer of this process itself within the regions it registered; off: all by the provider") {
  for (const bool local : {true, false}) {
    CAPTURE(local);
    auto opts = loopback_options("shm");
    opts.local_copies = local;
    opts.slice_bytes = 64 << 10;
    endpoint_pair p(opts);
    aligned_buffer src(1 << 20), dst(1 << 20), back(1 << 20);
    fill_random(src.ptr, src.size, 11);
    std::fill(dst.ptr, dst.ptr + dst.size, std::byte{0});
    auto src_mr = p.a->register_memory(src.ptr, src.size);
    auto back_mr = p.a->register_memory(back.ptr, back.size);
    auto dst_mr = p.b->register_memory(dst.ptr, dst.size);
    // A write of 16 slices, a gathered write of two pieces in reverse order, then a read of it all back.
    p.a->write(traffic_class::kv, *src_mr, 0, p.to_b, dst_mr->remote(), 0, 512 << 10, 1);
    p.a->write_gather(traffic_class::kv, *src_mr, {{768 << 10, 4096}, {512 << 10, 4096}}, p.to_b, dst_mr->remote(),
                      512 << 10, 2);
    std::vector<completion> done;
    REQUIRE(pump(
        p.both(), [&] { return done.size() == 2; }, 10s, &done));
    p.a->read(traffic_class::kv, *back_mr, 0, p.to_b, dst_mr->remote(), 0, (512 << 10) + 8192, 3);
    auto bad_key = dst_mr->remote();
    bad_key.key += 0x5a5a;
    p.a->write(traffic_class::kv, *src_mr, 0, p.to_b, bad_key, 0, 4096, 4);
    REQUIRE(pump(
        p.both(), [&] { return done.size() == 4; }, 10s, &done));
    std::map<uint64_t, completion> by_context;
    for (auto& c : done) by_context[c.context] = c;
    CHECK(by_context[1].ok);
    CHECK(by_context[2].ok);
    CHECK(by_context[3].ok);
    // A key the peer never registered is not copied here but left to the provider. (shm's own RMA checks no
    // key where it copies with CMA: it lands either way.)
    CHECK(by_context[4].ok);
    CHECK(fnv1a(dst.ptr, 512 << 10) == fnv1a(src.ptr, 512 << 10));
    CHECK(fnv1a(dst.ptr + (512 << 10), 4096) == fnv1a(src.ptr + (768 << 10), 4096));
    CHECK(fnv1a(dst.ptr + (516 << 10), 4096) == fnv1a(src.ptr + (512 << 10), 4096));
    CHECK(fnv1a(back.ptr, (512 << 10) + 8192) == fnv1a(dst.ptr, (512 << 10) + 8192));
    CHECK(p.a->stats().local_copies == (local ? 8u + 1 + 9 : 0u));

    // A region that was deregistered is no longer copied to here (its memory is still there: the provider's
    // copy lands).
    const auto gone = dst_mr->remote();
    dst_mr.reset();
    p.a->write(traffic_class::kv, *src_mr, 0, p.to_b, gone, 0, 4096, 5);
    REQUIRE(pump(
        p.both(), [&] { return done.size() == 5; }, 10s, &done));
    CHECK(p.a->stats().local_copies == (local ? 18u : 0u));
  }
}
