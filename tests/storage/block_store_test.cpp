#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "core/status.hpp"
#include "storage/block_files.hpp"
#include "storage/block_store.hpp"
#include "test_util.hpp"

using namespace dualpath;
using namespace dualpath::storage;

namespace {

// Reads `keys` in one batch; returns the completions in key order.
std::vector<read_completion> read_all(block_store& s, const std::vector<block_key>& keys,
                                      std::vector<aligned_buffer>& bufs) {
  std::vector<read_request> batch;
  bufs.clear();
  for (size_t i = 0; i < keys.size(); ++i) {
    bufs.push_back(make_aligned_buffer(s.read_buffer_bytes()));
    batch.push_back({keys[i], bufs.back().get(), i});
  }
  s.submit(batch);
  auto got = test::collect(s, keys.size());
  REQUIRE(got.size() == keys.size());
  std::vector<read_completion> ordered(keys.size());
  for (auto& c : got) ordered[c.user_data] = std::move(c);
  return ordered;
}

using test::flip_byte;
using test::write_chain;

std::vector<int32_t> tokens(size_t n, int32_t seed) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = int32_t(i * 7 + seed);
  return t;
}

}  // namespace

TEST_CASE("blocks of several layouts round-trip through batched reads and layer reads") {
  for (auto f : {test::small_format(1, 1, 64, 8), test::small_format(2, 61, 64, 656), test::small_format(3, 3, 5, 7)}) {
    test::scratch_dir dir;
    auto store = block_store::open(test::scratch_store_options(dir.str(), f));
    const auto keys = block_keys_from_ids({1, 2, 3, 4, 5, 6});
    write_chain(*store, keys);
    std::vector<aligned_buffer> bufs;
    const auto got = read_all(*store, keys, bufs);
    for (size_t i = 0; i < keys.size(); ++i) {
      CHECK_MESSAGE(got[i].ok(), got[i].message);
      CHECK(got[i].key == keys[i]);
      CHECK(got[i].bytes_read == f.file_bytes());
      CHECK(got[i].payload == bufs[i].get() + store->payload_offset());
      const auto expect = test::payload_for(f, keys[i]);
      CHECK(std::memcmp(got[i].payload, expect.data(), expect.size()) == 0);
    }
    std::vector<std::byte> layer(f.layer_bytes());
    const uint32_t last = f.layers - 1;
    REQUIRE(store->read_layer(keys[2], last, layer.data()).ok());
    const auto expect = test::payload_for(f, keys[2]);
    CHECK(std::memcmp(layer.data(), expect.data() + last * f.layer_bytes(), layer.size()) == 0);
    CHECK_FALSE(store->read_layer(keys[2], f.layers, layer.data()).ok());
    const auto st = store->stats();
    CHECK(st.blocks == keys.size());
    CHECK(st.writes == keys.size());
    CHECK(st.reads == keys.size() + 1);
  }
}

TEST_CASE("longest-prefix lookup over two trajectories that share a prefix") {
  test::scratch_dir dir;
  const auto f = test::small_format();
  auto store = block_store::open(test::scratch_store_options(dir.str(), f));
  // Two agents share 3 blocks of context, then diverge.
  auto a = tokens(16 * 5, 1);
  auto b = a;
  for (size_t i = 16 * 3; i < b.size(); ++i) b[i] += 1000;
  const auto ka = block_keys(a, f.tokens), kb = block_keys(b, f.tokens);
  REQUIRE(ka.size() == 5);
  CHECK(ka[2] == kb[2]);
  CHECK(ka[3] != kb[3]);
  CHECK(store->lookup(ka) == 0);
  write_chain(*store, ka);
  CHECK(store->lookup(ka) == 5);
  CHECK(store->lookup(kb) == 3);  // the shared prefix hits
  write_chain(*store, kb);        // the shared blocks are already there: not rewritten
  CHECK(store->stats().blocks == 7);
  CHECK(store->lookup(kb) == 5);
  auto longer = ka;
  longer.push_back(chain_key(ka.back(), a.data(), 16));
  CHECK(store->lookup(longer) == 5);
  CHECK(store->lookup({}) == 0);
}

TEST_CASE("a flipped byte in a stored block is a counted miss from that block on, never served") {
  const auto f = test::small_format(7, 4, 16, 32);
  for (uint32_t layer = 0; layer < f.layers; ++layer) {
    test::scratch_dir dir;
    auto store = block_store::open(test::scratch_store_options(dir.str(), f));
    const auto keys = block_keys_from_ids({10, 11, 12, 13});
    write_chain(*store, keys);
    flip_byte(block_path(dir.str(), keys[1]), f.header_bytes() + layer * f.layer_bytes() + 3);
    std::vector<aligned_buffer> bufs;
    const auto got = read_all(*store, keys, bufs);
    CHECK(got[0].ok());
    CHECK_FALSE(got[1].ok());
    CHECK(got[1].message == "layer " + std::to_string(layer) + " checksum");
    CHECK(got[1].payload == nullptr);
    CHECK(store->stats().corrupt == 1);
    // The chain now ends before the bad block; it can be written again.
    CHECK(store->lookup(keys) == 1);
    std::vector<std::byte> slice(f.layer_bytes());
    CHECK_FALSE(store->read_layer(keys[1], layer, slice.data()).ok());
    const auto p = test::payload_for(f, keys[1]);
    CHECK(store->write(keys[1], keys[0], p.data()).ok());
    CHECK(store->lookup(keys) == 4);  // the intact rest of the chain serves again
  }
}

TEST_CASE("a layer read verifies its slice alone") {
  test::scratch_dir dir;
  const auto f = test::small_format(7, 4, 16, 32);
  auto store = block_store::open(test::scratch_store_options(dir.str(), f));
  const auto keys = block_keys_from_ids({1});
  write_chain(*store, keys);
  flip_byte(block_path(dir.str(), keys[0]), f.header_bytes() + 2 * f.layer_bytes());
  std::vector<std::byte> slice(f.layer_bytes());
  CHECK(store->read_layer(keys[0], 1, slice.data()).ok());  // an intact slice of the damaged block
  const status why = store->read_layer(keys[0], 2, slice.data());
  CHECK_FALSE(why.ok());
  CHECK(why.message() == "layer 2 checksum");
}

TEST_CASE("a block written for another model is refused and a truncated one is a miss") {
  test::scratch_dir dir;
  const auto keys = block_keys_from_ids({1, 2});
  {
    auto other = block_store::open(test::scratch_store_options(dir.str(), test::small_format(0xaaaa)));
    write_chain(*other, keys);
  }
  auto store = block_store::open(test::scratch_store_options(dir.str(), test::small_format(0xbbbb)));
  CHECK(store->stats().blocks == 0);
  CHECK(store->stats().foreign == 2);
  CHECK(store->lookup(keys) == 0);
  std::vector<aligned_buffer> bufs;
  auto got = read_all(*store, keys, bufs);
  CHECK_FALSE(got[0].ok());
  CHECK(got[0].message == "wrong fingerprint");
  // Our own write replaces the foreign block.
  write_chain(*store, keys);
  CHECK(store->lookup(keys) == 2);
  ::truncate(block_path(dir.str(), keys[1]).c_str(), 4096 + 10);
  got = read_all(*store, keys, bufs);
  CHECK(got[0].ok());
  CHECK_FALSE(got[1].ok());
  CHECK(got[1].message.find("wrong size") == 0);
  CHECK(store->lookup(keys) == 1);
  ::unlink(block_path(dir.str(), keys[0]).c_str());
  got = read_all(*store, keys, bufs);
  CHECK(got[0].message == "miss");
  CHECK(store->stats().misses >= 1);
}

TEST_CASE("eviction under a capacity limit keeps every chain hole-free") {
  test::scratch_dir dir;
  const auto f = test::small_format();
  auto o = test::scratch_store_options(dir.str(), f);
  o.capacity_bytes = 10 * f.file_bytes();
  auto store = block_store::open(o);
  std::vector<std::vector<block_key>> chains;
  for (uint64_t c = 0; c < 6; ++c) {
    std::vector<uint64_t> ids;
    for (uint64_t i = 0; i < 4; ++i) ids.push_back(c * 100 + i);
    chains.push_back(block_keys_from_ids(ids));
    write_chain(*store, chains.back());
    // Keep chain 0 hot: it must survive.
    CHECK(store->lookup(chains[0]) == 4);
    CHECK(store->stats().bytes <= o.capacity_bytes);
  }
  const auto st = store->stats();
  CHECK(st.evictions >= 14);
  CHECK(st.blocks <= 10);
  size_t present_total = 0;
  for (const auto& chain : chains) {
    const size_t n = store->lookup(chain);
    present_total += n;
    // Hole-free: nothing after the longest prefix is stored.
    for (size_t i = n; i < chain.size(); ++i) CHECK_FALSE(std::filesystem::exists(block_path(dir.str(), chain[i])));
  }
  CHECK(present_total == st.blocks);
  CHECK(store->lookup(chains[0]) == 4);
  CHECK(store->lookup(chains[5]) >= 1);  // the newest chain kept at least its start
}

TEST_CASE("remove drops a block and everything chained from it") {
  test::scratch_dir dir;
  auto store = block_store::open(test::scratch_store_options(dir.str(), test::small_format()));
  const auto keys = block_keys_from_ids({1, 2, 3, 4});
  write_chain(*store, keys);
  CHECK(store->remove(keys[1]));
  CHECK(store->lookup(keys) == 1);
  CHECK(store->stats().blocks == 1);
  CHECK_FALSE(store->remove(keys[2]));
}

TEST_CASE("reopening a store recovers its index, chains and all, from the blocks alone") {
  test::scratch_dir dir;
  const auto f = test::small_format();
  const auto a = block_keys_from_ids({1, 2, 3});
  const auto b = block_keys_from_ids({1, 2, 9, 10});
  {
    auto store = block_store::open(test::scratch_store_options(dir.str(), f));
    write_chain(*store, a);
    write_chain(*store, b);
  }
  // A crashed writer's temporary file is not a block.
  std::filesystem::create_directories(block_subdir(dir.str(), 77));
  {
    std::FILE* tmp = std::fopen((block_subdir(dir.str(), 77) + "/.junk.tmp").c_str(), "w");
    std::fclose(tmp);
  }
  auto o = test::scratch_store_options(dir.str(), f);
  o.capacity_bytes = 3 * f.file_bytes();
  auto store = block_store::open(o);
  CHECK(store->stats().blocks == 5);
  CHECK(store->lookup(a) == 3);
  CHECK(store->lookup(b) == 4);
  // Over capacity: the next write evicts ends of chains only (parents were recovered from headers).
  const auto c = block_keys_from_ids({50});
  write_chain(*store, c);
  CHECK(store->stats().blocks <= 3);
  CHECK(store->lookup(c) == 1);
  for (const auto& chain : {a, b}) {
    const size_t n = store->lookup(chain);
    for (size_t i = n; i < chain.size(); ++i) CHECK_FALSE(std::filesystem::exists(block_path(dir.str(), chain[i])));
  }
}

TEST_CASE("without io_uring (refused by a seccomp policy, or switched off) reads still work") {
  test::scratch_dir dir;
  const auto f = test::small_format();
  ::setenv("DUALPATH_STORAGE_NO_URING", "1", 1);
  auto store = block_store::open(test::scratch_store_options(dir.str(), f));
  ::unsetenv("DUALPATH_STORAGE_NO_URING");
  CHECK_FALSE(store->stats().io_uring);
  const auto keys = block_keys_from_ids({1, 2, 3});
  write_chain(*store, keys);
  std::vector<aligned_buffer> bufs;
  auto with_miss = keys;
  with_miss.push_back(999);
  const auto got = read_all(*store, with_miss, bufs);
  for (size_t i = 0; i < keys.size(); ++i) {
    CHECK_MESSAGE(got[i].ok(), got[i].message);
    const auto expect = test::payload_for(f, keys[i]);
    CHECK(std::memcmp(got[i].payload, expect.data(), expect.size()) == 0);
  }
  CHECK(got[3].message == "miss");
  flip_byte(block_path(dir.str(), keys[1]), f.header_bytes() + 5);
  CHECK(read_all(*store, keys, bufs)[1].message == "layer 0 checksum");
  auto uring = block_store::open(test::scratch_store_options(dir.str(), f));
  CHECK(uring->stats().io_uring);
}

TEST_CASE("a block written by another store instance on the same directory is found") {
  test::scratch_dir dir;
  const auto f = test::small_format();
  auto first = block_store::open(test::scratch_store_options(dir.str(), f));
  auto second = block_store::open(test::scratch_store_options(dir.str(), f));
  const auto keys = block_keys_from_ids({4, 5});
  write_chain(*first, keys);
  CHECK(second->lookup(keys) == 2);
  std::vector<aligned_buffer> bufs;
  for (const auto& c : read_all(*second, keys, bufs)) CHECK(c.ok());
}

TEST_CASE("bad input: unwritable directory, bad layout, bad buffers") {
  test::scratch_dir dir;
  auto o = test::scratch_store_options(dir.str() + "/file", test::small_format());
  {
    std::FILE* fp = std::fopen((dir.str() + "/file").c_str(), "w");
    std::fclose(fp);
  }
  CHECK_THROWS_AS(block_store::open(o), user_error);
  o.dir = dir.str();
  o.format.layers = 0;
  CHECK_THROWS_AS(block_store::open(o), user_error);
  o.format = test::small_format();
  auto store = block_store::open(o);
  const auto keys = block_keys_from_ids({1});
  write_chain(*store, keys);
  auto buf = make_aligned_buffer(store->read_buffer_bytes() + block_alignment);
  store->submit({{keys[0], nullptr, 1}, {keys[0], buf.get() + 1, 2}});
  auto got = test::collect(*store, 2);
  REQUIRE(got.size() == 2);
  for (auto& c : got) {
    CHECK_FALSE(c.ok());
    CHECK(c.message.find("bad request") == 0);
  }
  CHECK(store->lookup(keys) == 1);  // a bad request does not harm the block
}

TEST_CASE("a request for a layer that does not exist is refused and harms nothing") {
  test::scratch_dir dir;
  const auto f = test::small_format();
  auto store = block_store::open(test::scratch_store_options(dir.str(), f));
  const block_key key = block_keys_from_ids({8})[0];
  REQUIRE(store->write(key, 0, test::payload_for(f, key).data()).ok());
  std::vector<std::byte> slice(f.layer_bytes());
  const status st = store->read_layer(key, f.layers, slice.data());
  CHECK(st.code() == errc::internal);
  CHECK(st.message().find("out of range") != std::string::npos);
  CHECK(store->stats().corrupt == 0);
  CHECK(std::filesystem::exists(block_path(dir.str(), key)));  // it used to be removed as corrupt
  CHECK(store->lookup({key}) == 1);
  CHECK(store->read_layer(key, 0, slice.data()).ok());
}
