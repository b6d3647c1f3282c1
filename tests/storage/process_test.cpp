// Crash and concurrency across processes: a writer killed mid-write, two writers of the same keys.
#include <doctest/doctest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "storage/block_files.hpp"
#include "storage/block_store.hpp"
#include "test_util.hpp"

using namespace dualpath;
using namespace dualpath::storage;

namespace {

struct dir_census {
  size_t blocks = 0, temps = 0, bad = 0;
};

// Every file that looks like a block must be a whole, valid block.
dir_census census(const std::string& dir, const block_format& f) {
  dir_census c;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    block_key key;
    if (is_temp_name(name)) {
      ++c.temps;
    } else if (parse_block_name(name, &key)) {
      std::ifstream in(e.path(), std::ios::binary);
      std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      ++c.blocks;
      if (!check_block(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size(), f, key).ok()) ++c.bad;
    }
  }
  return c;
}

// Waits for a child, killing it if it runs past the deadline. Returns its exit status.
int wait_child(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return status;
}

// Child body: writes `keys` as one chain forever (or once), then exits without cleanup.
[[noreturn]] void child_writer(const store_options& o, const std::vector<block_key>& keys, bool forever, int ready_fd) {
  int rc = 0;
  try {
    auto store = block_store::open(o);
    const auto payload = test::payload_for(o.format, 1);
    if (ready_fd >= 0) {
      char b = 1;
      [[maybe_unused]] auto n = ::write(ready_fd, &b, 1);
    }
    do {
      block_key parent = 0;
      for (block_key k : keys) {
        if (forever) store->remove(k);  // keep rewriting the same blocks
        if (!store->write(k, parent, payload.data()).ok()) rc = 3;
        parent = k;
      }
    } while (forever);
  } catch (...) {
    rc = 4;
  }
  ::_exit(rc);
}

}  // namespace

TEST_CASE("a writer killed with SIGKILL mid-write leaves no visible partial block") {
  test::scratch_dir dir;
  const auto f = test::small_format(5, 8, 64, 4096);  // 2 MiB blocks: most of the time is spent writing
  auto o = test::scratch_store_options(dir.str(), f);
  o.fsync = true;
  const auto keys = block_keys_from_ids({1, 2, 3, 4});
  bool caught_mid_write = false;
  for (int attempt = 0; attempt < 12 && !caught_mid_write; ++attempt) {
    int pipe_fd[2];
    REQUIRE(::pipe(pipe_fd) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(pipe_fd[0]);
      child_writer(o, keys, true, pipe_fd[1]);
    }
    ::close(pipe_fd[1]);
    char b;
    REQUIRE(::read(pipe_fd[0], &b, 1) == 1);
    ::close(pipe_fd[0]);
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + attempt * 7));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status));
    const auto c = census(dir.str(), f);
    CHECK(c.bad == 0);
    caught_mid_write = c.temps > 0;
  }
  CHECK_MESSAGE(caught_mid_write, "no kill landed inside a write");
  // Reopening indexes only whole blocks, and every one of them reads back.
  auto store = block_store::open(o);
  const size_t n = store->stats().blocks;
  CHECK(n <= keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!store->contains(keys[i])) continue;
    std::vector<std::byte> slice(f.layer_bytes());
    const status why = store->read_layer(keys[i], f.layers - 1, slice.data());
    CHECK_MESSAGE(why.ok(), why.to_string());
  }
}

TEST_CASE("two processes writing the same keys at once end with one valid block per key") {
  test::scratch_dir dir;
  const auto f = test::small_format(6, 4, 64, 256);
  auto o = test::scratch_store_options(dir.str(), f);
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 40; ++i) ids.push_back(i);
  const auto keys = block_keys_from_ids(ids);
  pid_t pids[2];
  for (pid_t& pid : pids) {
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) child_writer(o, keys, false, -1);
  }
  for (pid_t pid : pids) {
    const int status = wait_child(pid, std::chrono::seconds(30));
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  const auto c = census(dir.str(), f);
  CHECK(c.blocks == keys.size());
  CHECK(c.bad == 0);
  CHECK(c.temps == 0);
  auto store = block_store::open(o);
  CHECK(store->lookup(keys) == keys.size());
}
