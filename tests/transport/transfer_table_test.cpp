// The transfer table alone: slicing, in-flight accounting per class, completion and failure, all
// without a provider (time is a fixed point the tests choose).
#include <doctest/doctest.h>

#include <algorithm>

#include "transport/transfer_table.hpp"

using namespace dualpath::transport;
using namespace std::chrono_literals;

namespace {

const time_point t0 = time_point{} + 1h;

transfer_request request(traffic_class tc, uint64_t length, uint64_t context,
                         std::optional<uint64_t> remote_data = {}) {
  transfer_request r = make_transfer_request(tc, true, 0, length, context, remote_data);
  r.remote_addr = 1 << 20;
  return r;
}

// Opens a transfer for `r` and returns its queued slice ids.
std::vector<uint64_t> add(transfer_table& table, const transfer_request& r, uint64_t slice_bytes,
                          uint64_t* transfer = nullptr) {
  const uint64_t id = table.open(r.context, r.tc, r.peer, r.length, t0);
  if (transfer) *transfer = id;
  return table.add_slices(id, r, slice_bytes);
}

}  // namespace

TEST_CASE("transfer table cuts a transfer into slices that cover it exactly") {
  transfer_table table;
  auto r = request(traffic_class::kv, 10000, 7);
  r.local = reinterpret_cast<std::byte*>(0x1000);
  const auto ids = add(table, r, 4096);
  REQUIRE(ids.size() == 3);
  uint64_t covered = 0;
  for (uint64_t id : ids) {
    const slice* s = table.find_slice(id);
    REQUIRE(s);
    CHECK(s->local == r.local + covered);
    CHECK(s->remote_addr == r.remote_addr + covered);
    CHECK_FALSE(s->carries_data);
    covered += s->length;
  }
  CHECK(covered == 10000);
  CHECK(table.find_slice(ids.back())->length == 10000 - 2 * 4096);
}

TEST_CASE("transfer table counts bytes and slices in flight per class, once per post and release") {
  transfer_table table;
  const auto kv = add(table, request(traffic_class::kv, 3 * 4096, 1), 4096);
  const auto model = add(table, request(traffic_class::model, 1000, 2), 4096);
  for (uint64_t id : kv) table.mark_posted(id, t0);
  table.mark_posted(model[0], t0);
  CHECK(table.inflight(traffic_class::kv).slices == 3);
  CHECK(table.inflight(traffic_class::kv).bytes == 3 * 4096);
  CHECK(table.inflight(traffic_class::model).slices == 1);
  CHECK(table.inflight(traffic_class::model).bytes == 1000);
  CHECK(table.inflight_slices() == 4);

  table.complete(kv[0], t0);
  CHECK(table.inflight(traffic_class::kv).slices == 2);
  CHECK(table.inflight(traffic_class::kv).bytes == 2 * 4096);
  CHECK(table.stats(traffic_class::kv).slices == 1);
  CHECK(table.stats(traffic_class::kv).bytes == 4096);
  // A repeated completion of the same slice (a provider quirk) changes nothing.
  table.complete(kv[0], t0);
  CHECK(table.inflight(traffic_class::kv).slices == 2);
  CHECK(table.stats(traffic_class::kv).slices == 1);

  table.complete(model[0], t0);
  CHECK(table.inflight(traffic_class::model).slices == 0);
  CHECK(table.inflight(traffic_class::model).bytes == 0);
  CHECK(table.inflight(traffic_class::kv).bytes == 2 * 4096);  // the other class is untouched
}

TEST_CASE("transfer table finishes a transfer once its last slice lands") {
  transfer_table table;
  const auto ids = add(table, request(traffic_class::model, 8192, 42), 4096);
  CHECK(table.model_pending() == 1);
  for (uint64_t id : ids) table.mark_posted(id, t0);
  table.complete(ids[0], t0);
  CHECK_FALSE(table.has_completions());
  CHECK(table.busy());
  table.complete(ids[1], t0 + 1ms);
  REQUIRE(table.has_completions());
  CHECK(table.model_ready() == 1);
  CHECK(table.model_pending() == 0);
  CHECK(table.last_model() == t0 + 1ms);
  const auto done = table.take_completions();
  REQUIRE(done.size() == 1);
  CHECK(done[0].context == 42);
  CHECK(done[0].ok);
  CHECK(done[0].error.empty());
  CHECK(table.model_ready() == 0);
  CHECK_FALSE(table.busy());
  CHECK(table.stats(traffic_class::model).transfers == 1);
  CHECK(table.stats(traffic_class::model).errors == 0);
}

TEST_CASE("transfer table holds the remote-data slice until every other slice has landed") {
  transfer_table table;
  uint64_t transfer = 0;
  const auto ids = add(table, request(traffic_class::kv, 3 * 4096, 5, 99), 4096, &transfer);
  REQUIRE(ids.size() == 2);  // the third is held
  table.mark_posted(ids[0], t0);
  table.mark_posted(ids[1], t0);
  CHECK_FALSE(table.complete(ids[1], t0).has_value());
  const auto held = table.complete(ids[0], t0);
  REQUIRE(held.has_value());
  const slice* last = table.find_slice(*held);
  REQUIRE(last);
  CHECK(last->carries_data);
  CHECK(last->data == 99);
  CHECK(last->length == 4096);
  CHECK(last->transfer == transfer);
  table.mark_posted(*held, t0);
  table.complete(*held, t0);
  const auto done = table.take_completions();
  REQUIRE(done.size() == 1);
  CHECK(done[0].ok);
}

TEST_CASE("transfer table: a one-slice transfer with remote data is not held") {
  transfer_table table;
  const auto ids = add(table, request(traffic_class::kv, 100, 5, 7), 4096);
  REQUIRE(ids.size() == 1);
  CHECK(table.find_slice(ids[0])->carries_data);
}

TEST_CASE("transfer table splits a queued slice and moves the remote data to the rest") {
  transfer_table table;
  auto r = request(traffic_class::kv, 4096, 3, 11);
  r.local = reinterpret_cast<std::byte*>(0x10000);
  uint64_t transfer = 0;
  const auto ids = add(table, r, 4096, &transfer);
  REQUIRE(ids.size() == 1);
  const auto cut = table.split(ids[0], 1024);
  CHECK(cut.held);
  const slice* head = table.find_slice(ids[0]);
  const slice* rest = table.find_slice(cut.rest);
  REQUIRE(head);
  REQUIRE(rest);
  CHECK(head->length == 1024);
  CHECK_FALSE(head->carries_data);
  CHECK(rest->length == 3072);
  CHECK(rest->local == r.local + 1024);
  CHECK(rest->remote_addr == r.remote_addr + 1024);
  CHECK(rest->carries_data);
  // The head landing releases the rest: it is now the last piece of the transfer.
  table.mark_posted(ids[0], t0);
  const auto held = table.complete(ids[0], t0);
  REQUIRE(held.has_value());
  CHECK(*held == cut.rest);
}

TEST_CASE("transfer table: a failed transfer releases its posted slices and ignores their late completions") {
  transfer_table table;
  uint64_t failing = 0;
  const auto a = add(table, request(traffic_class::kv, 4 * 4096, 1, 8), 4096, &failing);
  const auto b = add(table, request(traffic_class::kv, 4096, 2), 4096);
  table.mark_posted(a[0], t0);
  table.mark_posted(a[1], t0);
  table.mark_posted(b[0], t0);
  CHECK(table.inflight(traffic_class::kv).slices == 3);

  table.fail(failing, "boom", t0);
  CHECK(table.inflight(traffic_class::kv).slices == 1);
  CHECK(table.inflight(traffic_class::kv).bytes == 4096);
  CHECK_FALSE(table.has_transfer(failing));
  CHECK(table.find_slice(a[0]) == nullptr);
  // The provider may still complete what it was given: nothing changes.
  CHECK_FALSE(table.complete(a[0], t0).has_value());
  CHECK(table.inflight(traffic_class::kv).slices == 1);
  // Failing twice reports once.
  table.fail(failing, "again", t0);
  auto done = table.take_completions();
  REQUIRE(done.size() == 1);
  CHECK(done[0].context == 1);
  CHECK_FALSE(done[0].ok);
  CHECK(done[0].error == "boom");
  CHECK(table.stats(traffic_class::kv).errors == 1);
  CHECK(table.stats(traffic_class::kv).transfers == 1);

  // Queued slices of the failed transfer wait for the scheduler to drop them.
  REQUIRE(table.find_slice(a[2]) != nullptr);
  table.drop(a[2]);
  CHECK(table.find_slice(a[2]) == nullptr);

  table.complete(b[0], t0);
  done = table.take_completions();
  REQUIRE(done.size() == 1);
  CHECK(done[0].ok);
  CHECK(table.inflight_slices() == 0);
}

TEST_CASE("transfer table reports each overdue transfer once") {
  transfer_table table;
  uint64_t slow = 0;
  const auto a = add(table, request(traffic_class::kv, 2 * 4096, 1), 4096, &slow);
  const auto b = add(table, request(traffic_class::model, 4096, 2), 4096);
  table.mark_posted(a[0], t0);
  table.mark_posted(a[1], t0);
  table.mark_posted(b[0], t0 + 50ms);
  CHECK(table.expired(t0 + 100ms, 100ms).empty());
  const auto late = table.expired(t0 + 120ms, 100ms);
  REQUIRE(late.size() == 1);
  CHECK(late[0].transfer == slow);
  CHECK(late[0].peer == 0);
  CHECK(table.expired(t0 + 200ms, 100ms).size() == 2);
}

TEST_CASE("transfer table tells contexts apart even when a caller repeats one") {
  transfer_table table;
  const auto a = add(table, request(traffic_class::kv, 4096, 9), 4096);
  const auto b = add(table, request(traffic_class::kv, 4096, 9), 4096);
  table.mark_posted(a[0], t0);
  table.mark_posted(b[0], t0);
  table.complete(b[0], t0);
  CHECK(table.take_completions().size() == 1);
  CHECK(table.busy());
  table.complete(a[0], t0);
  CHECK(table.take_completions().size() == 1);
  CHECK_FALSE(table.busy());
}
