// Write failures (disk full, read-only or forbidden directory) are reported and lose nothing stored.
#include <doctest/doctest.h>

#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "storage/block_files.hpp"
#include "storage/block_store.hpp"
#include "test_util.hpp"

using namespace dualpath;
using namespace dualpath::storage;

namespace {

struct small_mount {
  test::scratch_dir dir;
  bool mounted = false;
  small_mount() { mounted = ::mount("tmpfs", dir.str().c_str(), "tmpfs", 0, "size=1m") == 0; }
  ~small_mount() {
    if (mounted) ::umount2(dir.str().c_str(), MNT_DETACH);
  }
};

// Every block of `keys[0..n)` reads back intact.
void check_intact(block_store& s, const std::vector<block_key>& keys, size_t n) {
  CHECK(s.lookup(keys) >= n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::byte> slice(s.options().format.layer_bytes());
    const status why = s.read_layer(keys[i], 0, slice.data());
    CHECK_MESSAGE(why.ok(), why.to_string());
  }
}

using test::temp_files;

}  // namespace

TEST_CASE("a full disk reports the error and keeps what was stored") {
  small_mount m;
  if (!m.mounted) {
    MESSAGE("cannot mount a 1 MiB tmpfs here; the injected-error test covers this path");
    return;
  }
  const auto f = test::small_format(8, 4, 64, 256);  // 68 KiB files: about 15 fit
  auto store = block_store::open(test::scratch_store_options(m.dir.str(), f));
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 40; ++i) ids.push_back(i);
  const auto keys = block_keys_from_ids(ids);
  size_t stored = 0;
  status failure;
  block_key parent = 0;
  for (block_key k : keys) {
    const auto r = store->write(k, parent, test::payload_for(f, k).data());
    if (!r.ok()) {
      failure = r;
      break;
    }
    ++stored;
    parent = k;
  }
  REQUIRE(stored > 0);
  REQUIRE(stored < keys.size());
  CHECK(failure.code() == errc::io);  // the errno travels as its text
  CHECK(failure.message().find(std::strerror(ENOSPC)) != std::string::npos);
  CHECK(failure.message().find("No space") != std::string::npos);
  CHECK(store->stats().write_errors == 1);
  CHECK(store->stats().blocks == stored);
  CHECK(temp_files(m.dir.str()) == 0);
  check_intact(*store, keys, stored);

  // Read-only now: writes fail with the error, reads go on.
  REQUIRE(::mount(nullptr, m.dir.str().c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) == 0);
  ::unlink(block_path(m.dir.str(), keys[0]).c_str());  // refused too: the store keeps its blocks
  const auto r = store->write(keys[stored], keys[stored - 1], test::payload_for(f, 1).data());
  CHECK_FALSE(r.ok());
  CHECK(r.code() == errc::io);
  CHECK(r.message().find(std::strerror(EROFS)) != std::string::npos);
  check_intact(*store, keys, stored);
  // And a store cannot be opened for writing there.
  CHECK_THROWS(block_store::open(test::scratch_store_options(m.dir.str(), f)));
}

TEST_CASE("an injected write error (disk full, permission) is reported and loses nothing") {
  test::scratch_dir dir;
  const auto f = test::small_format();
  auto store = block_store::open(test::scratch_store_options(dir.str(), f));
  const auto keys = block_keys_from_ids({1, 2, 3});
  REQUIRE(store->write(keys[0], 0, test::payload_for(f, keys[0]).data()).ok());
  for (int err : {ENOSPC, EACCES}) {
    inject_write_error(err);
    const auto r = store->write(keys[1], keys[0], test::payload_for(f, keys[1]).data());
    inject_write_error(0);
    CHECK_FALSE(r.ok());
    CHECK(r.code() == errc::io);
    CHECK(r.message().find(std::strerror(err)) != std::string::npos);
    CHECK_FALSE(r.message().empty());
  }
  CHECK(store->stats().write_errors == 2);
  CHECK(temp_files(dir.str()) == 0);
  CHECK(store->lookup(keys) == 1);
  check_intact(*store, keys, 1);
  CHECK(store->write(keys[1], keys[0], test::payload_for(f, keys[1]).data()).ok());
  CHECK(store->lookup(keys) == 2);
}
