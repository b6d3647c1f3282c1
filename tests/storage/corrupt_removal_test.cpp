// A damaged block file is removed so the block can be written again; only the version that was judged
// damaged may go, never a good block a writer renamed into place after the read (docs/design.md §9).
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "storage/block_files.hpp"
#include "storage/block_store.hpp"
#include "test_util.hpp"

using namespace dualpath;
using namespace dualpath::storage;

namespace {

file_id id_at(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return identity_of(st);
}

// Writes a good block image of `key` to its path the way a concurrent writer does (temp file, rename).
void rename_good_block_into_place(const std::string& dir, const block_format& f, block_key key, block_key parent) {
  const auto image = build_block(f, key, parent, test::payload_for(f, key).data());
  const status st = write_file_atomic(block_path(dir, key), image.data(), image.size(), false, false);
  REQUIRE_MESSAGE(st.ok(), st.to_string());
}

bool file_is_valid_block(const std::string& path, const block_format& f, block_key key) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return check_block(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size(), f, key).ok();
}

}  // namespace

TEST_CASE("a read that finds a block corrupt removes that file, through both read paths") {
  test::scratch_dir dir;
  const auto f = test::small_format();
  auto store = block_store::open(test::scratch_store_options(dir.str(), f));
  const auto keys = block_keys_from_ids({1, 2});
  for (size_t i = 0; i < keys.size(); ++i)
    REQUIRE(store->write(keys[i], i ? keys[i - 1] : 0, test::payload_for(f, keys[i]).data()).ok());
  for (block_key k : keys) test::flip_byte(block_path(dir.str(), k), f.header_bytes() + 9);

  auto buf = make_aligned_buffer(store->read_buffer_bytes());
  store->submit({{keys[0], buf.get(), 0}});
  const auto got = test::collect(*store, 1);
  REQUIRE(got.size() == 1);
  CHECK(got[0].outcome == read_outcome::corrupt);
  CHECK_FALSE(std::filesystem::exists(block_path(dir.str(), keys[0])));

  std::vector<std::byte> slice(f.layer_bytes());
  CHECK(store->read_layer(keys[1], 0, slice.data()).code() == errc::corrupt);
  CHECK_FALSE(std::filesystem::exists(block_path(dir.str(), keys[1])));
  CHECK(store->stats().corrupt == 2);
  CHECK(test::temp_files(dir.str()) == 0);
}

TEST_CASE("a good block renamed over a corrupt one after the read is not removed with it") {
  test::scratch_dir dir;
  const auto f = test::small_format();
  const block_key key = block_keys_from_ids({4})[0];
  const std::string path = block_path(dir.str(), key);
  {
    auto store = block_store::open(test::scratch_store_options(dir.str(), f));
    REQUIRE(store->write(key, 0, test::payload_for(f, key).data()).ok());
  }
  test::flip_byte(path, f.header_bytes() + 1);
  REQUIRE_FALSE(file_is_valid_block(path, f, key));
  const file_id judged = id_at(path);  // what a reader captured when it opened the corrupt file

  // The interleaving of the race, made deterministic: the writer's rename lands after the read and
  // before the reader removes what it judged.
  rename_good_block_into_place(dir.str(), f, key, 0);
  const file_id fresh = id_at(path);
  CHECK(fresh != judged);

  CHECK_FALSE(remove_if_same(path, judged));
  REQUIRE(std::filesystem::exists(path));
  CHECK(id_at(path) == fresh);
  CHECK(file_is_valid_block(path, f, key));
  CHECK(test::temp_files(dir.str()) == 0);
  auto store = block_store::open(test::scratch_store_options(dir.str(), f));
  std::vector<std::byte> slice(f.layer_bytes());
  const status st = store->read_layer(key, f.layers - 1, slice.data());
  CHECK_MESSAGE(st.ok(), st.to_string());

  // The judged version itself does go, and nothing is left behind.
  CHECK(remove_if_same(path, fresh));
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK(test::temp_files(dir.str()) == 0);
  CHECK_FALSE(remove_if_same(path, fresh));  // nothing there any more
}
