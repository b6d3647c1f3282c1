// One store shared by several threads (the runtime's traffic queues and decode engines do this).
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "storage/snic_gate.hpp"
#include "test_util.hpp"

using namespace dualpath;
using namespace dualpath::storage;

TEST_CASE("threads writing, looking up and reading through gates on one store at once") {
  test::scratch_dir dir;
  const auto f = test::small_format(4, 4, 16, 64);
  auto o = test::scratch_store_options(dir.str(), f);
  o.capacity_bytes = 60 * f.file_bytes();  // eviction runs while others read
  auto store = block_store::open(o);
  std::atomic<int> bad{0}, served{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      snic_gate gate(*store, 0, 8);
      std::vector<uint64_t> ids;
      for (uint64_t i = 0; i < 24; ++i) ids.push_back(uint64_t(t % 2) * 1000 + i);  // pairs share chains
      const auto keys = block_keys_from_ids(ids);
      block_key parent = 0;
      for (block_key k : keys) {
        if (!store->write(k, parent, test::payload_for(f, k).data()).ok()) ++bad;
        parent = k;
      }
      for (int round = 0; round < 5; ++round) {
        const size_t n = store->lookup(keys);
        std::vector<aligned_buffer> bufs;
        std::vector<read_request> batch;
        for (size_t i = 0; i < n; ++i) {
          bufs.push_back(make_aligned_buffer(store->read_buffer_bytes()));
          batch.push_back({keys[i], bufs.back().get(), i});
        }
        gate.submit(batch);
        for (const auto& c : test::collect(gate, n)) {
          if (!c.ok()) continue;  // evicted by another thread in between: a miss, never wrong data
          const auto expect = test::payload_for(f, c.key);
          if (std::memcmp(c.payload, expect.data(), expect.size()) != 0) ++bad;
          ++served;
        }
        if (gate.read_q() != 0 || gate.pending() != 0) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(bad == 0);
  CHECK(served > 0);
  const auto st = store->stats();
  CHECK(st.bytes <= o.capacity_bytes);
  CHECK(st.corrupt == 0);
}

TEST_CASE("a block written from per-layer slices equals the contiguous one") {
  test::scratch_dir dir;
  const auto f = test::small_format(4, 5, 8, 24);
  auto store = block_store::open(test::scratch_store_options(dir.str(), f));
  const auto payload = test::payload_for(f, 9);
  std::vector<std::vector<std::byte>> slices;
  std::vector<const std::byte*> ptrs;
  for (uint32_t l = 0; l < f.layers; ++l) {
    slices.emplace_back(payload.begin() + l * f.layer_bytes(), payload.begin() + (l + 1) * f.layer_bytes());
    ptrs.push_back(slices.back().data());
  }
  CHECK(store->write_layers(9, 0, ptrs).ok());
  auto too_few = ptrs;
  too_few.pop_back();
  const auto r = store->write_layers(10, 9, too_few);
  CHECK_FALSE(r.ok());
  CHECK(r.code() == errc::internal);  // EINVAL before: the caller's bug, not the disk's
  auto buf = make_aligned_buffer(store->read_buffer_bytes());
  store->submit({{9, buf.get(), 0}});
  const auto got = test::collect(*store, 1);
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].ok());
  CHECK(std::memcmp(got[0].payload, payload.data(), payload.size()) == 0);
}
