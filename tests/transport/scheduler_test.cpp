// Posting and arbitration against a fake provider and a fake clock: model traffic first, kv in its gaps
// and with its share, the kv guard, rate caps as byte accounting, and the provider's "try again" and
// refusals. Nothing here depends on how fast the machine is.
#include <doctest/doctest.h>

#include <algorithm>
#include <deque>

#include "transport/scheduler.hpp"

using namespace dualpath::transport;
using namespace std::chrono_literals;

namespace {

// Records what it is given; answers from `script` first, then `otherwise`.
struct fake_poster : poster {
  std::vector<slice> posted;
  std::deque<post_result> script;
  post_result otherwise{post_result::accepted, {}};
  std::string down;
  std::function<void()> on_progress;
  int attempts = 0;

  post_result post(const slice& s) override {
    attempts++;
    post_result r = otherwise;
    if (!script.empty()) {
      r = script.front();
      script.pop_front();
    }
    if (r.status == post_result::accepted) posted.push_back(s);
    return r;
  }
  dualpath::status reachable(uint32_t) override {
    return down.empty() ? dualpath::status{} : dualpath::status(dualpath::errc::unavailable, down);
  }
  void progress() override {
    if (on_progress) on_progress();
  }
};

struct rig {
  fabric_options opts;
  time_point now = time_point{} + 1h;
  transfer_table table;
  fake_poster provider;
  std::unique_ptr<scheduler> sched;
  size_t completed = 0;  // posted slices already handed back

  explicit rig(const fabric_options& o, uint64_t kv_guard = 0) : opts(o) {
    sched = std::make_unique<scheduler>(opts, kv_guard, table, provider, [this] { return now; });
  }

  uint64_t submit(traffic_class tc, uint64_t length, uint64_t context, bool is_write = true,
                  std::optional<uint64_t> remote_data = {}) {
    return sched->submit(make_transfer_request(tc, is_write, 0, length, context, remote_data));
  }
  std::vector<completion> done;

  // Completes every posted slice not completed yet, as a provider that is done with all of them.
  void complete_all() {
    while (completed < provider.posted.size()) sched->completed(provider.posted[completed++].id);
  }
  // What endpoint::poll_completions() does around the scheduler: post, then hand out what finished.
  void poll() {
    sched->schedule();
    collect();
  }
  void collect() {
    for (auto& c : table.take_completions()) done.push_back(std::move(c));
  }
  std::vector<traffic_class> classes() const {
    std::vector<traffic_class> out;
    for (const auto& s : provider.posted) out.push_back(s.tc);
    return out;
  }
};

fabric_options options(uint32_t max_inflight, uint64_t slice_bytes) {
  fabric_options o;
  o.max_inflight = max_inflight;
  o.slice_bytes = slice_bytes;
  o.timeout = 100ms;
  return o;
}

}  // namespace

TEST_CASE("scheduler posts model traffic before kv queued ahead of it") {
  rig r(options(4, 4096));
  for (int i = 0; i < 8; ++i) r.submit(traffic_class::kv, 4096, i);
  r.submit(traffic_class::model, 4096, 100);
  r.sched->schedule();
  REQUIRE_FALSE(r.provider.posted.empty());
  CHECK(r.provider.posted[0].tc == traffic_class::model);
  CHECK(r.table.stats(traffic_class::model).transfers == 0);  // posted, not yet completed
}

TEST_CASE("scheduler keeps a posting slot free of kv, so model goes at once") {
  rig r(options(4, 4096));
  for (int i = 0; i < 10; ++i) r.submit(traffic_class::kv, 4096, i);
  r.sched->schedule();
  CHECK(r.provider.posted.size() == 3);  // kv fills max_inflight - 1 slots
  CHECK(r.table.inflight(traffic_class::kv).slices == 3);
  r.sched->schedule();
  CHECK(r.provider.posted.size() == 3);  // nothing completed: no room for more kv
  r.submit(traffic_class::model, 4096, 100);
  r.sched->schedule();
  REQUIRE(r.provider.posted.size() == 4);
  CHECK(r.provider.posted[3].tc == traffic_class::model);
  CHECK(r.table.inflight(traffic_class::model).slices == 1);
  CHECK(r.table.inflight(traffic_class::kv).slices == 3);
}

TEST_CASE("scheduler without isolation is one FIFO over the whole window") {
  auto opts = options(4, 4096);
  opts.isolation = false;
  rig r(opts);
  for (int i = 0; i < 6; ++i) r.submit(traffic_class::kv, 4096, i);
  r.submit(traffic_class::model, 4096, 100);
  r.poll();
  CHECK(r.provider.posted.size() == 4);
  const auto first = r.classes();
  CHECK(std::count(first.begin(), first.end(), traffic_class::model) == 0);
  for (int round = 0; round < 10; ++round) {
    r.complete_all();
    r.poll();
  }
  REQUIRE(r.provider.posted.size() == 7);
  CHECK(r.provider.posted.back().tc == traffic_class::model);  // behind every kv slice
}

TEST_CASE("scheduler gives kv its byte share while model keeps waiting") {
  auto opts = options(1, 16 << 10);
  opts.kv_share = 0.2;  // kv earns a quarter of each model slice served: one kv per four model
  rig r(opts);
  for (int i = 0; i < 40; ++i) r.submit(traffic_class::model, 16 << 10, 100 + i);
  for (int i = 0; i < 5; ++i) r.submit(traffic_class::kv, 16 << 10, i);
  for (int round = 0; round < 100 && r.provider.posted.size() < 45; ++round) {
    r.poll();
    r.complete_all();
  }
  REQUIRE(r.provider.posted.size() == 45);
  std::vector<size_t> kv_at;
  const auto classes = r.classes();
  for (size_t i = 0; i < classes.size(); ++i) {
    if (classes[i] == traffic_class::kv) kv_at.push_back(i);
  }
  CHECK(kv_at == std::vector<size_t>{4, 9, 14, 19, 24});
}

TEST_CASE("scheduler cuts kv to the guard next to model traffic, and only while it is recent") {
  auto opts = options(4, 1 << 20);
  opts.model_guard = 2ms;
  rig r(opts, 64 << 10);
  r.submit(traffic_class::model, 4096, 100);
  r.submit(traffic_class::kv, 1 << 20, 1, true, 7);
  r.submit(traffic_class::kv, 1 << 20, 2);
  r.poll();
  // The model slice is in flight and nothing else of its class waits: kv adds nothing behind it.
  REQUIRE(r.provider.posted.size() == 1);
  CHECK(r.provider.posted[0].tc == traffic_class::model);
  r.complete_all();
  r.poll();
  // The guard lasts model_guard past the model completion: one guard-sized kv piece at a time.
  REQUIRE(r.provider.posted.size() == 2);
  CHECK(r.provider.posted[1].length == 64u << 10);
  CHECK_FALSE(r.provider.posted[1].carries_data);
  r.complete_all();
  r.poll();
  REQUIRE(r.provider.posted.size() == 3);
  CHECK(r.provider.posted[2].length == 64u << 10);
  r.complete_all();
  r.now += 3ms;  // guard over: what is left goes in whole pieces, the window full
  r.poll();
  REQUIRE(r.provider.posted.size() == 6);
  CHECK(r.provider.posted[3].length == (1u << 20) - (128u << 10));
  CHECK(r.provider.posted[3].carries_data);  // the notification still rides on the last byte
  CHECK(r.provider.posted[3].data == 7);
  // The second block was cut at the guard while it lasted (its head waited for the window).
  CHECK(r.provider.posted[4].length == 64u << 10);
  CHECK(r.provider.posted[5].length == (1u << 20) - (64u << 10));
  r.complete_all();
  r.collect();
  CHECK(r.done.size() == 3);
  CHECK(std::all_of(r.done.begin(), r.done.end(), [](const completion& c) { return c.ok; }));
  CHECK(r.table.stats(traffic_class::kv).bytes == 2u << 20);
}

TEST_CASE("scheduler posts the remote-data slice only after the rest of its transfer") {
  rig r(options(8, 4096));
  r.submit(traffic_class::kv, 4 * 4096, 1, true, 55);
  r.sched->schedule();
  REQUIRE(r.provider.posted.size() == 3);
  CHECK(
      std::none_of(r.provider.posted.begin(), r.provider.posted.end(), [](const slice& s) { return s.carries_data; }));
  r.sched->completed(r.provider.posted[0].id);
  r.sched->completed(r.provider.posted[1].id);
  r.completed = 2;
  r.sched->schedule();
  CHECK(r.provider.posted.size() == 3);  // one slice still out
  r.complete_all();
  r.sched->schedule();
  REQUIRE(r.provider.posted.size() == 4);
  CHECK(r.provider.posted[3].carries_data);
  CHECK(r.provider.posted[3].data == 55);
}

TEST_CASE("scheduler rate caps: posted bytes stay within rate x time plus one slice, per direction") {
  auto opts = options(4, 64 << 10);
  opts.rate_gb_per_s = 1;  // 1e9 B/s: 10 kB of credit per 10 us step, under one slice per step
  rig r(opts);
  for (int i = 0; i < 300; ++i) {
    r.submit(traffic_class::kv, 64 << 10, i, true);
    r.submit(traffic_class::kv, 64 << 10, 1000 + i, false);
  }
  const time_point start = r.now;
  const double rate = 1e9;
  const double slice = 64 << 10;
  uint64_t written = 0, read = 0;
  size_t counted = 0;
  bool within = true;
  for (int step = 0; step <= 1000; ++step) {
    r.now = start + std::chrono::microseconds(10 * step);
    r.sched->schedule();
    for (; counted < r.provider.posted.size(); ++counted) {
      (r.provider.posted[counted].is_write ? written : read) += r.provider.posted[counted].length;
    }
    r.complete_all();
    const double allowed = rate * std::chrono::duration<double>(r.now - start).count() + slice;
    within = within && written <= allowed && read <= allowed;
  }
  CHECK(within);
  const double budget = rate * 0.01;  // 10 ms of fake time
  CAPTURE(written);
  CAPTURE(read);
  // The cap is also reached: the provider accepts everything, so only the bucket holds slices back.
  CHECK(written >= budget - slice);
  CHECK(read >= budget - slice);
}

TEST_CASE("scheduler lets model go ahead of kv debt by one slice, and charges it") {
  auto opts = options(4, 64 << 10);
  opts.rate_gb_per_s = 1;
  rig r(opts);
  r.submit(traffic_class::kv, 64 << 10, 1);
  r.poll();
  REQUIRE(r.provider.posted.size() == 1);  // a fresh bucket lets one slice start, then is 64 KiB in debt
  r.complete_all();
  r.submit(traffic_class::kv, 64 << 10, 2);
  r.submit(traffic_class::model, 64 << 10, 3);
  r.poll();
  REQUIRE(r.provider.posted.size() == 2);
  CHECK(r.provider.posted[1].tc == traffic_class::model);
  r.complete_all();
  r.collect();
  // Both slices are charged: kv waits until 128 KiB are paid back at 1 GB/s (131 us).
  r.now += 120us;
  r.poll();
  CHECK(r.provider.posted.size() == 2);
  const auto wait = r.sched->poll_delay();
  REQUIRE(wait.has_value());
  CHECK(*wait > 10us);
  CHECK(*wait <= 12us);
  r.now += 12us;
  r.poll();
  CHECK(r.provider.posted.size() == 3);
}

TEST_CASE("scheduler poll_delay: nothing queued, something posted, or the cap's wait") {
  auto opts = options(4, 64 << 10);
  opts.rate_gb_per_s = 0.001;  // 1e6 B/s
  rig r(opts);
  CHECK_FALSE(r.sched->poll_delay().has_value());
  r.submit(traffic_class::kv, 128 << 10, 1);
  r.sched->schedule();
  CHECK(r.sched->poll_delay() == std::chrono::nanoseconds{0});  // a slice is in flight
  r.complete_all();
  const auto wait = r.sched->poll_delay();
  REQUIRE(wait.has_value());
  CHECK(*wait > 65ms);
  CHECK(*wait <= 66ms);
}

TEST_CASE("scheduler keeps a slice's turn while the provider says try again, and gives up after the timeout") {
  rig r(options(4, 4096));
  r.provider.script = {{post_result::try_again, {}}, {post_result::try_again, {}}};
  r.submit(traffic_class::model, 4096, 1);
  r.submit(traffic_class::model, 4096, 2);
  r.poll();
  r.poll();
  CHECK(r.provider.posted.empty());
  r.poll();
  REQUIRE(r.provider.posted.size() == 2);
  CHECK(r.table.find_slice(r.provider.posted[0].id)->transfer == 1);  // the first kept its turn

  r.provider.otherwise = {post_result::try_again, {}};
  r.submit(traffic_class::kv, 4096, 3);
  r.poll();
  r.now += 50ms;
  r.poll();
  CHECK(r.done.empty());
  r.now += 51ms;
  r.poll();
  REQUIRE(r.done.size() == 1);
  CHECK(r.done[0].context == 3);
  CHECK_FALSE(r.done[0].ok);
  CHECK(r.done[0].error.find("stayed full") != std::string::npos);
  CHECK(r.sched->queued() == 0);
}

TEST_CASE("scheduler fails a transfer the provider refuses and keeps serving the others") {
  rig r(options(4, 4096));
  r.provider.script = {{post_result::refused, "fi_write failed: no"}};
  r.submit(traffic_class::kv, 3 * 4096, 1);
  r.submit(traffic_class::kv, 4096, 2);
  r.sched->schedule();
  // The refused transfer's other slices are dropped unposted; the next transfer goes.
  REQUIRE(r.provider.posted.size() == 1);
  CHECK(r.table.find_slice(r.provider.posted[0].id)->transfer == 2);
  r.complete_all();
  const auto done = r.table.take_completions();
  REQUIRE(done.size() == 2);
  CHECK(done[0].context == 1);
  CHECK_FALSE(done[0].ok);
  CHECK(done[0].error == "fi_write failed: no");
  CHECK(done[1].ok);
  CHECK(r.sched->queued() == 0);
  CHECK(r.table.inflight_slices() == 0);
}

TEST_CASE("scheduler fails transfers to an unreachable peer without posting them") {
  rig r(options(4, 4096));
  r.provider.down = "its endpoint was closed";
  r.submit(traffic_class::kv, 4096, 1);
  r.sched->schedule();
  CHECK(r.provider.attempts == 0);
  const auto done = r.table.take_completions();
  REQUIRE(done.size() == 1);
  CHECK(done[0].error == "peer 0 is unreachable: its endpoint was closed");
}

TEST_CASE("scheduler hands control back once a model transfer finished during its posts") {
  rig r(options(4, 4096));
  // A provider that completes inside progress(), as shm does with its copies.
  r.provider.on_progress = [&] { r.complete_all(); };
  r.submit(traffic_class::model, 4096, 100);
  for (int i = 0; i < 3; ++i) r.submit(traffic_class::kv, 4096, i);
  r.sched->schedule();
  CHECK(r.provider.posted.size() == 1);  // the model slice, then straight back to the owner
  CHECK(r.table.model_ready() == 1);
  r.table.take_completions();
  r.sched->schedule();
  CHECK(r.provider.posted.size() == 4);
}

TEST_CASE("kv guard is on by default only for stream providers with isolation") {
  fabric_options o;
  o.slice_bytes = 1 << 20;
  CHECK(scheduler::kv_guard_for(o, true) == 32u << 10);
  CHECK(scheduler::kv_guard_for(o, false) == 0);
  o.kv_guard_bytes = 64 << 10;
  CHECK(scheduler::kv_guard_for(o, false) == 64u << 10);
  o.isolation = false;
  CHECK(scheduler::kv_guard_for(o, true) == 0);
  o.isolation = true;
  o.slice_bytes = 16 << 10;  // slices already smaller than the guard
  CHECK(scheduler::kv_guard_for(o, true) == 0);
}
