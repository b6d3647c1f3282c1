// The store's measured read rate, α's SNIC rate when the SNIC is uncapped (docs/design.md §7.1).
#include <doctest/doctest.h>

#include "storage/read_rate.hpp"
#include "test_util.hpp"

using namespace dualpath;
using namespace dualpath::storage;

TEST_CASE("read-rate probe: real reads, a positive rate, and the store left as it was") {
  test::scratch_dir dir;
  const block_format f = test::small_format(3, 4, 64, 256);  // 64 KiB payload
  auto store = block_store::open(test::scratch_store_options(dir.str(), f));
  const auto keys = block_keys_from_ids({1, 2, 3});
  block_key parent = 0;
  for (block_key k : keys) {
    REQUIRE(store->write(k, parent, test::payload_for(f, k).data()).ok());
    parent = k;
  }
  const auto before = store->stats();
  const auto r = measure_read_rate(*store, 1 << 20);
  REQUIRE(r.ok());
  CHECK(r.value().blocks >= 8);
  CHECK(r.value().bytes == uint64_t(r.value().blocks) * store->read_buffer_bytes());
  CHECK(r.value().bytes_per_s > 0);
  const auto after = store->stats();
  CHECK(after.blocks == before.blocks);  // the probe blocks are gone again
  CHECK(after.read_bytes - before.read_bytes == r.value().bytes);
  CHECK(store->lookup(keys) == 3);  // and the real ones untouched
}

TEST_CASE("read-rate probe: a full store with a capacity evicts nothing") {
  test::scratch_dir dir;
  const block_format f = test::small_format(3, 4, 64, 256);
  auto opts = test::scratch_store_options(dir.str(), f);
  auto probe = block_store::open(opts);
  opts.capacity_bytes = 2 * probe->read_buffer_bytes();
  probe.reset();
  auto store = block_store::open(opts);
  const auto keys = block_keys_from_ids({1, 2});
  REQUIRE(store->write(keys[0], 0, test::payload_for(f, keys[0]).data()).ok());
  REQUIRE(store->write(keys[1], keys[0], test::payload_for(f, keys[1]).data()).ok());
  const auto r = measure_read_rate(*store);
  CHECK_FALSE(r.ok());
  CHECK(r.error().code() == errc::capacity);
  CHECK(store->lookup(keys) == 2);
  CHECK(store->stats().evictions == 0);
}
