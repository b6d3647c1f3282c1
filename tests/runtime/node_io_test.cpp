// The node data plane on its own: buffer slots with backpressure, SNIC loads from real block files,
// and copies through real libfabric endpoints (shm loopback and node to node).
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>

#include "runtime/node_io.hpp"
#include "storage/block_files.hpp"
#include "tests/common/scratch_dir.hpp"
#include "tests/common/scratch_store.hpp"

using namespace dualpath;
using namespace dualpath::runtime;
namespace fs = std::filesystem;

namespace {

struct fixture {
  test::scratch_dir dir;
  kv_geometry geo{2, 16, 64};  // 2 layers, 16 tokens, 64 B per token and layer: 2 KiB Full Blocks
  std::unique_ptr<storage::block_store> store;

  fixture() {
    store = storage::block_store::open(test::scratch_store_options(
        dir.str(), {42, geo.layers, geo.block_tokens, uint32_t(geo.bytes_per_token_layer)}));
  }
  node_io_options options(uint32_t node, uint32_t slots) const {
    node_io_options o;
    o.node = node;
    o.engines = {node};
    o.geometry = geo;
    o.buffer_bytes = uint64_t(slots) * store->read_buffer_bytes();
    o.hbm_bytes = 1 << 20;
    o.timeout = std::chrono::milliseconds(5000);
    return o;
  }
  std::vector<std::byte> payload(uint8_t seed) const {
    std::vector<std::byte> p(geo.block_bytes());
    for (size_t i = 0; i < p.size(); ++i) p[i] = std::byte(uint8_t(seed * 31 + i));
    return p;
  }
};

// Every node's endpoints in one directory, each node connected to it: nodes 0..n-1 of one cluster.
fabric_directory connect_all(std::initializer_list<node_io*> nodes) {
  fabric_directory dir(nodes.size());
  for (auto* io : nodes)
    for (auto& e : io->entries()) dir[e.engine] = e;
  for (auto* io : nodes) io->connect(dir);
  return dir;
}

template <class T>
bool ready(std::future<T>& f, int ms) {
  return f.wait_for(std::chrono::milliseconds(ms)) == std::future_status::ready;
}

}  // namespace

TEST_CASE("buffer slots: a reservation waits while the buffer is full and is granted on release") {
  fixture fx;
  node_io io(fx.options(0, 4), *fx.store);
  std::promise<std::string> too_big;
  io.reserve(5, [&](result<std::vector<uint32_t>> r) { too_big.set_value(r.error().message()); });
  CHECK(too_big.get_future().get().find("holds 4") != std::string::npos);

  std::promise<std::vector<uint32_t>> first, second;
  io.reserve(3, [&](result<std::vector<uint32_t>> s) { first.set_value(s.value()); });
  const auto held = first.get_future().get();
  CHECK(held.size() == 3);
  auto f2 = second.get_future();
  io.reserve(2, [&](result<std::vector<uint32_t>> s) { second.set_value(s.value()); });
  CHECK_FALSE(ready(f2, 100));  // only one slot free: it waits, nothing is dropped
  io.release(held);
  REQUIRE(ready(f2, 2000));
  CHECK(f2.get().size() == 2);
}

TEST_CASE("loads read Full Blocks through the SNIC gate; a corrupt block ends the valid prefix") {
  fixture fx;
  std::vector<block_key> keys{11, 12, 13};
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto p = fx.payload(uint8_t(i));
    REQUIRE(fx.store->write(keys[i], i ? keys[i - 1] : 0, p.data()).ok());
  }
  node_io io(fx.options(0, 8), *fx.store);
  std::promise<load_result> done;
  io.load(keys, [&](load_result r) { done.set_value(std::move(r)); });
  auto r = done.get_future().get();
  REQUIRE(r.valid == 3);
  CHECK(r.status.ok());
  CHECK(r.bytes > 0);
  for (size_t i = 0; i < keys.size(); ++i)
    CHECK(std::memcmp(io.slot_data(r.slots[i]), fx.payload(uint8_t(i)).data(), fx.geo.block_bytes()) == 0);
  io.release(r.slots);

  {  // flip a payload byte of the middle block
    std::fstream f(storage::block_path(fx.dir.str(), keys[1]), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(fx.store->payload_offset() + 5);
    f.put(char(0x7f));
  }
  std::promise<load_result> again;
  io.load(keys, [&](load_result x) { again.set_value(std::move(x)); });
  r = again.get_future().get();
  CHECK(r.valid == 1);
  CHECK(r.status.message().find("checksum") != std::string::npos);
  CHECK(io.stats().read_failures >= 1);
}

TEST_CASE("copies move bytes through libfabric: loopback buffer to HBM and node to node") {
  fixture fx;
  node_io a(fx.options(0, 4), *fx.store), b(fx.options(1, 4), *fx.store);
  connect_all({&a, &b});

  const auto p = fx.payload(9);
  std::memcpy(a.slot_data(0), p.data(), p.size());
  auto dst = a.hbm(0).allocate(p.size());
  std::promise<std::string> local, remote;
  a.copy({{0, region_kind::buffer, a.slot_offset(0), 0, region_kind::hbm, dst.offset, p.size()}},
         transport::traffic_class::kv, [&](status e) { local.set_value(e.message()); });
  CHECK(local.get_future().get().empty());
  CHECK(std::memcmp(dst.data, p.data(), p.size()) == 0);

  // Node 0's engine writes from its HBM into node 1's buffer slot 2.
  a.copy({{0, region_kind::hbm, dst.offset, 1, region_kind::buffer, b.slot_offset(2), p.size()}},
         transport::traffic_class::model, [&](status e) { remote.set_value(e.message()); });
  CHECK(remote.get_future().get().empty());
  CHECK(std::memcmp(b.slot_data(2), p.data(), p.size()) == 0);
  CHECK(a.stats().copies == 2);
}

// `de_fetch = "pull"` (docs/design.md §4): node 0's engine reads node 1's buffer slots into its own HBM with
// RMA reads, posted and answered on node 0 alone; once node 1 is lost the same read fails at once.
TEST_CASE("pulls read another node's buffer into this node's HBM; a lost node's pulls fail at once") {
  fixture fx;
  node_io a(fx.options(0, 4), *fx.store), b(fx.options(1, 4), *fx.store);
  connect_all({&a, &b});
  const uint64_t layer = fx.geo.layer_bytes();
  const auto p = fx.payload(3), q = fx.payload(4);
  std::memcpy(b.slot_data(1), p.data(), p.size());
  std::memcpy(b.slot_data(3), q.data(), q.size());
  auto dst = a.hbm(0).allocate(2 * layer);
  std::memset(dst.data, 0, 2 * layer);
  auto pull = [&](const std::vector<copy_op>& ops) {
    std::promise<std::string> done;
    a.copy(ops, transport::traffic_class::kv, [&](status e) { done.set_value(e.ok() ? "" : e.message()); });
    auto f = done.get_future();
    REQUIRE(ready(f, 5000));
    return f.get();
  };
  // Layer 1 of each block, into back-to-back bytes (a staging slot's run): each is its own read.
  std::vector<copy_op> ops(2);
  ops[0] = {0, region_kind::buffer, b.slot_offset(1) + layer, 0, region_kind::hbm, dst.offset, layer};
  ops[1] = {0, region_kind::buffer, b.slot_offset(3) + layer, 0, region_kind::hbm, dst.offset + layer, layer};
  for (auto& op : ops) op.src_engine = 1;
  CHECK(pull(ops).empty());
  CHECK(std::memcmp(dst.data, p.data() + layer, layer) == 0);
  CHECK(std::memcmp(dst.data + layer, q.data() + layer, layer) == 0);
  CHECK(a.stats().copy_writes == 2);
  CHECK(b.stats().copies == 0);  // node 1 posted nothing

  a.node_lost(1);
  CHECK(pull(ops).find("node 1 was lost") != std::string::npos);
}

// A pass's fetch of a layer: Layer Blocks from buffer slots that are not next to each other, into adjacent
// bytes of HBM. shm gathers up to four pieces a write, so six copies go as two provider writes.
TEST_CASE("copies into back-to-back bytes are gathered into fewer provider writes, every byte in place") {
  fixture fx;
  node_io a(fx.options(0, 8), *fx.store);
  fabric_directory dir(1);
  for (auto& e : a.entries()) dir[e.engine] = e;
  a.connect(dir);
  const uint64_t layer = fx.geo.layer_bytes();
  auto dst = a.hbm(0).allocate(6 * layer + 64);
  std::memset(dst.data, 0, 6 * layer + 64);
  std::vector<copy_op> ops;
  for (uint32_t k = 0; k < 6; ++k) {
    const uint32_t slot = 7 - k;  // slots in reverse: no two sources adjacent in order
    const auto p = fx.payload(uint8_t(k + 1));
    std::memcpy(a.slot_data(slot), p.data(), p.size());
    // Layer 1 of each block (the second half of its Full Block), as a fetch of layer 1 takes it.
    ops.push_back(
        {0, region_kind::buffer, a.slot_offset(slot) + layer, 0, region_kind::hbm, dst.offset + k * layer, layer});
  }
  // A seventh copy elsewhere (not back to back with the sixth) goes on its own.
  ops.push_back({0, region_kind::buffer, a.slot_offset(0), 0, region_kind::hbm, dst.offset + 6 * layer + 32, 32});
  std::promise<std::string> done;
  a.copy(ops, transport::traffic_class::kv, [&](status e) { done.set_value(e.message()); });
  CHECK(done.get_future().get().empty());
  for (uint32_t k = 0; k < 6; ++k) {
    const auto p = fx.payload(uint8_t(k + 1));
    CHECK(std::memcmp(dst.data + k * layer, p.data() + layer, layer) == 0);
  }
  CHECK(std::memcmp(dst.data + 6 * layer + 32, a.slot_data(0), 32) == 0);
  CHECK(dst.data[6 * layer] == std::byte{0});  // the gap between the runs is untouched
  CHECK(a.stats().copies == 7);
  CHECK(a.stats().copy_writes == 3);  // 4 + 2 gathered, and the one apart
}

// docs/design.md §13: a lost node's copies fail at once; once it comes back as a new process (new endpoints,
// new registrations), node_rejoined points the survivors at it and the same copy lands there.
TEST_CASE("copies to a lost node fail at once; after node_rejoined they reach its new endpoints") {
  fixture fx;
  node_io a(fx.options(0, 4), *fx.store);
  auto b = std::make_unique<node_io>(fx.options(1, 4), *fx.store);
  fabric_directory dir(2);
  for (auto* io : {&a, b.get()})
    for (auto& e : io->entries()) dir[e.engine] = e;
  a.connect(dir);
  b->connect(dir);

  const auto p = fx.payload(5);
  auto src = a.hbm(0).allocate(p.size());
  std::memcpy(src.data, p.data(), p.size());
  auto copy_to = [&](node_io& target) {
    std::promise<std::string> done;
    a.copy({{0, region_kind::hbm, src.offset, 1, region_kind::buffer, target.slot_offset(1), p.size()}},
           transport::traffic_class::kv, [&](status e) { done.set_value(e.ok() ? "" : e.message()); });
    auto f = done.get_future();
    REQUIRE(ready(f, 5000));
    return f.get();
  };
  CHECK(copy_to(*b).empty());

  a.node_lost(1);
  const auto lost = copy_to(*b);
  CHECK(lost.find("node 1 was lost") != std::string::npos);

  b.reset();  // the process is gone; node 1 starts again with other addresses and keys
  node_io b2(fx.options(1, 4), *fx.store);
  fabric_directory dir2 = dir;
  for (auto& e : b2.entries()) dir2[e.engine] = e;
  b2.connect(dir2);
  a.node_rejoined(b2.entries());
  std::memset(b2.slot_data(1), 0, p.size());
  CHECK(copy_to(b2).empty());
  CHECK(std::memcmp(b2.slot_data(1), p.data(), p.size()) == 0);
}

TEST_CASE("write-back: stored at once, answered no sooner than the capped SNIC would have sent it") {
  fixture fx;
  auto o = fx.options(0, 4);
  o.snic_gb_per_s = 1e-4;  // 100 KB/s: each block file takes 20 ms or more of the link
  node_io io(o, *fx.store);
  const double link_s = double(fx.store->read_buffer_bytes()) / 1e5;
  const std::vector<block_key> keys{21, 22, 23, 24, 25};
  std::vector<std::promise<std::chrono::steady_clock::time_point>> answered(keys.size());
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto p = fx.payload(uint8_t(i));
    io.persist(keys[i], i ? keys[i - 1] : 0, p.data(),
               [&, i] { answered[i].set_value(std::chrono::steady_clock::now()); });
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    const double at = std::chrono::duration<double>(answered[i].get_future().get() - t0).count();
    CHECK(at >= double(i + 1) * link_s * 0.99);  // the link sends one block after another
  }
  CHECK(fx.store->lookup(keys) == keys.size());
  CHECK(io.stats().persisted_blocks == keys.size());
  CHECK(io.stats().snic_write_bytes == keys.size() * fx.store->read_buffer_bytes());
  CHECK(io.stats().write_queue_peak_bytes >= fx.geo.block_bytes());
}

TEST_CASE("write-back: a block beyond a full queue is not persisted, and its turn is still answered") {
  fixture fx;
  auto o = fx.options(0, 4);
  o.write_queue_bytes = fx.geo.block_bytes() - 1;  // not even one block fits: every write-back is refused
  node_io io(o, *fx.store);
  std::promise<void> answered;
  const auto p = fx.payload(1);
  io.persist(31, 0, p.data(), [&] { answered.set_value(); });
  auto f = answered.get_future();
  REQUIRE(ready(f, 2000));
  CHECK(fx.store->lookup({31}) == 0);
  CHECK(io.stats().persisted_blocks == 0);
  CHECK(io.stats().persist_errors == 1);
  CHECK(io.stats().write_queue_peak_bytes == 0);
}
