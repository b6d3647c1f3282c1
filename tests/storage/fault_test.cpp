// The storage fault seams (core/faults.hpp) driven through a real store: an injected fault must look to
// the store and its callers exactly like the real one (docs/design.md §9).
#include <doctest/doctest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/faults.hpp"
#include "storage/block_files.hpp"
#include "storage/block_store.hpp"
#include "test_util.hpp"

using namespace dualpath;
using namespace dualpath::storage;

namespace {

using test::write_chain;

read_completion read_one(block_store& s, block_key key, aligned_buffer& buf) {
  buf = make_aligned_buffer(s.read_buffer_bytes());
  s.submit({{key, buf.get(), 7}});
  auto got = test::collect(s, 1);
  REQUIRE(got.size() == 1);
  return std::move(got[0]);
}

bool payload_is(const block_format& f, block_key key, const std::byte* data, uint64_t offset = 0, uint64_t n = 0) {
  const auto expect = test::payload_for(f, key);
  return std::memcmp(data, expect.data() + offset, n ? n : expect.size()) == 0;
}

}  // namespace

TEST_CASE("outcome names are stable for logs") {
  CHECK(std::string(outcome_name(read_outcome::ok)) == "ok");
  CHECK(std::string(outcome_name(read_outcome::miss)) == "miss");
  CHECK(std::string(outcome_name(read_outcome::corrupt)) == "corrupt");
  CHECK(std::string(outcome_name(read_outcome::foreign)) == "foreign");
  CHECK(std::string(outcome_name(read_outcome::truncated)) == "truncated");
  CHECK(std::string(outcome_name(read_outcome::io_error)) == "io_error");
  CHECK(std::string(outcome_name(read_outcome::bad_request)) == "bad_request");
}

TEST_CASE("an injected read fault completes as EIO, keeps the block, and the block reads once disarmed") {
  for (const bool uring : {true, false}) {
    CAPTURE(uring);
    test::scratch_dir dir;
    const auto f = test::small_format();
    if (!uring) ::setenv("DUALPATH_STORAGE_NO_URING", "1", 1);
    auto store = block_store::open(test::scratch_store_options(dir.str(), f));
    ::unsetenv("DUALPATH_STORAGE_NO_URING");
    const auto keys = block_keys_from_ids({1, 2});
    write_chain(*store, keys);
    const std::string path = block_path(dir.str(), keys[0]);
    const uint64_t fired_before = faults::fired(faults::point::storage_read);
    aligned_buffer buf;
    {
      faults::scoped armed(faults::point::storage_read);
      const read_completion c = read_one(*store, keys[0], buf);
      CHECK_FALSE(c.ok());
      CHECK(c.outcome == read_outcome::io_error);
      CHECK(c.message == std::string("read error: ") + std::strerror(EIO));
      CHECK(c.payload == nullptr);
      CHECK(c.user_data == 7);
    }
    CHECK(faults::fired(faults::point::storage_read) == fired_before + 1);
    auto st = store->stats();
    CHECK(st.io_errors == 1);
    CHECK(st.corrupt == 0);
    CHECK(st.misses == 0);
    CHECK(st.reads == 0);
    // The disk failed, not the block: still on disk, still indexed, served again.
    CHECK(std::filesystem::exists(path));
    CHECK(store->lookup(keys) == 2);
    const read_completion again = read_one(*store, keys[0], buf);
    REQUIRE_MESSAGE(again.ok(), again.message);
    CHECK(again.outcome == read_outcome::ok);
    CHECK(payload_is(f, keys[0], again.payload));
    CHECK(store->stats().reads == 1);
  }
}

TEST_CASE("an injected read fault fails a layer read with an io status and keeps the block") {
  test::scratch_dir dir;
  const auto f = test::small_format();
  auto store = block_store::open(test::scratch_store_options(dir.str(), f));
  const auto keys = block_keys_from_ids({3});
  write_chain(*store, keys);
  std::vector<std::byte> slice(f.layer_bytes());
  {
    faults::scoped armed(faults::point::storage_read);
    const status st = store->read_layer(keys[0], 2, slice.data());
    CHECK(st.code() == errc::io);
    CHECK(st.message() == std::string("read error: ") + std::strerror(EIO));
  }
  CHECK(store->stats().io_errors == 1);
  CHECK(store->stats().corrupt == 0);
  CHECK(std::filesystem::exists(block_path(dir.str(), keys[0])));
  CHECK(store->lookup(keys) == 1);
  const status st = store->read_layer(keys[0], 2, slice.data());
  REQUIRE_MESSAGE(st.ok(), st.to_string());
  CHECK(payload_is(f, keys[0], slice.data(), 2 * f.layer_bytes(), f.layer_bytes()));
}

TEST_CASE("an injected write fault fails as a full disk would: no temporary file, nothing stored lost") {
  test::scratch_dir dir;
  const auto f = test::small_format();
  auto store = block_store::open(test::scratch_store_options(dir.str(), f));
  const auto keys = block_keys_from_ids({1, 2, 3});
  write_chain(*store, {keys[0], keys[1]});
  const uint64_t fired_before = faults::fired(faults::point::storage_write);
  {
    faults::scoped armed(faults::point::storage_write);
    const status st = store->write(keys[2], keys[1], test::payload_for(f, keys[2]).data());
    CHECK_FALSE(st.ok());
    CHECK(st.code() == errc::io);
    CHECK(st.message().find(std::strerror(ENOSPC)) == 0);
  }
  CHECK(faults::fired(faults::point::storage_write) == fired_before + 1);
  const auto st = store->stats();
  CHECK(st.write_errors == 1);
  CHECK(st.writes == 2);
  CHECK(st.blocks == 2);
  CHECK(test::temp_files(dir.str()) == 0);
  CHECK_FALSE(std::filesystem::exists(block_path(dir.str(), keys[2])));
  CHECK(store->lookup(keys) == 2);
  aligned_buffer buf;
  for (size_t i = 0; i < 2; ++i) {
    const read_completion c = read_one(*store, keys[i], buf);
    REQUIRE_MESSAGE(c.ok(), c.message);
    CHECK(payload_is(f, keys[i], c.payload));
  }
  // Disarmed, the same write goes through.
  const status again = store->write(keys[2], keys[1], test::payload_for(f, keys[2]).data());
  CHECK_MESSAGE(again.ok(), again.to_string());
  CHECK(store->lookup(keys) == 3);
}

TEST_CASE("an injected write fault over a foreign block leaves that block as it was") {
  test::scratch_dir dir;
  const auto keys = block_keys_from_ids({5});
  {
    auto other = block_store::open(test::scratch_store_options(dir.str(), test::small_format(0xaaaa)));
    write_chain(*other, keys);
  }
  const std::string path = block_path(dir.str(), keys[0]);
  const auto before = std::filesystem::last_write_time(path);
  const auto f = test::small_format(0xbbbb);
  auto store = block_store::open(test::scratch_store_options(dir.str(), f));
  {
    faults::scoped armed(faults::point::storage_write);
    CHECK(store->write(keys[0], 0, test::payload_for(f, keys[0]).data()).code() == errc::io);
  }
  CHECK(std::filesystem::last_write_time(path) == before);
  CHECK(test::temp_files(dir.str()) == 0);
  aligned_buffer buf;
  CHECK(read_one(*store, keys[0], buf).outcome == read_outcome::foreign);
  CHECK(std::filesystem::exists(path));  // foreign blocks are left to their owner
}
