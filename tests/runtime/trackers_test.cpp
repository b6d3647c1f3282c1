// The progress loop's bookkeeping: loads matched to their block reads, copy batches to their transfers.
// A completion nobody waits for is counted, never fatal.
#include <doctest/doctest.h>

#include "runtime/copy_tracker.hpp"
#include "runtime/load_tracker.hpp"

using namespace dualpath;
using namespace dualpath::runtime;

namespace {
storage::read_completion read_done(uint64_t user_data, storage::read_outcome o, const char* message = "") {
  storage::read_completion c;
  c.user_data = user_data;
  c.outcome = o;
  c.message = message;
  c.bytes_read = o == storage::read_outcome::ok ? 100 : 0;
  return c;
}
}  // namespace

TEST_CASE("load tracker: a load finishes with its last block; the valid prefix ends at the first bad one") {
  load_tracker t;
  std::byte buf[3][8];
  load_result partial;
  partial.slots = {5, 6, 7};
  auto reads = t.add({11, 12, 13}, {buf[0], buf[1], buf[2]}, partial, {});
  REQUIRE(reads.ok());
  REQUIRE(reads.value().size() == 3);
  CHECK(reads.value()[1].key == 12);
  CHECK(reads.value()[1].buffer == buf[1]);
  // Back in another order than asked: block 2 fine, block 1 corrupt, block 0 fine.
  CHECK_FALSE(t.complete(read_done(reads.value()[2].user_data, storage::read_outcome::ok)));
  CHECK_FALSE(t.complete(read_done(reads.value()[1].user_data, storage::read_outcome::corrupt, "layer 0 checksum")));
  auto done = t.complete(read_done(reads.value()[0].user_data, storage::read_outcome::ok));
  REQUIRE(done);
  CHECK(done->second.valid == 1);
  CHECK(done->second.slots == std::vector<uint32_t>{5, 6, 7});
  CHECK(done->second.bytes == 200);
  CHECK(done->second.status.code() == errc::corrupt);
  CHECK(done->second.status.message() == "layer 0 checksum");
  CHECK(t.empty());
}

TEST_CASE("load tracker: unknown loads, indices past the load and repeated completions are dropped and counted") {
  load_tracker t;
  std::byte buf[8];
  auto reads = t.add({1}, {buf}, {}, {});
  REQUIRE(reads.ok());
  const uint64_t ud = reads.value()[0].user_data;
  CHECK_FALSE(t.complete(read_done(load_tracker::pack(999, 0), storage::read_outcome::ok)));
  CHECK_FALSE(t.complete(read_done(ud + 5, storage::read_outcome::ok)));  // index 5 of a one-block load
  CHECK(t.stray() == 2);
  auto done = t.complete(read_done(ud, storage::read_outcome::miss, "miss"));
  REQUIRE(done);
  CHECK(done->second.valid == 0);
  CHECK(done->second.status.code() == errc::not_found);
  CHECK_FALSE(t.complete(read_done(ud, storage::read_outcome::ok)));  // its load is gone
  CHECK(t.stray() == 3);
}

TEST_CASE("read outcomes map to the one error type") {
  CHECK(read_status(read_done(0, storage::read_outcome::ok)).ok());
  CHECK(read_status(read_done(0, storage::read_outcome::foreign)).code() == errc::not_found);
  CHECK(read_status(read_done(0, storage::read_outcome::truncated)).code() == errc::corrupt);
  CHECK(read_status(read_done(0, storage::read_outcome::io_error)).code() == errc::io);
  CHECK(read_status(read_done(0, storage::read_outcome::bad_request)).code() == errc::internal);
}

TEST_CASE("copy tracker: a batch ends with its last transfer and keeps the first error") {
  copy_tracker t;
  const uint64_t b = t.add_batch(3, {});
  const uint64_t c0 = t.context_for(b), c1 = t.context_for(b), c2 = t.context_for(b);
  CHECK(c0 != c1);
  CHECK_FALSE(t.complete(c1, false, "peer gone"));
  CHECK_FALSE(t.complete(c0, false, "second error"));
  auto done = t.complete(c2, true, "");
  REQUIRE(done);
  CHECK(done->second.code() == errc::transfer);
  CHECK(done->second.message() == "peer gone");
  CHECK(t.empty());
  CHECK_FALSE(t.complete(c2, true, ""));  // already finished: counted, not fatal
  CHECK(t.stray() == 1);
}
