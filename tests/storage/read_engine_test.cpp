// The read engine on its own (storage/read_engine.hpp): every job completes exactly once with the file's
// bytes (or the open's error), its callback on the engine's one I/O thread, and an engine destroyed with
// work queued still calls back every job before its destructor returns.
#include <doctest/doctest.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "storage/read_engine.hpp"
#include "test_util.hpp"

using namespace dualpath;
using namespace dualpath::storage;

namespace {

// `count` files of `bytes` each (a multiple of block_alignment) in a scratch directory, file i filled with the
// byte i, and the buffers the jobs read them into.
struct file_set {
  test::scratch_dir dir;
  uint64_t bytes;
  std::vector<std::string> paths;
  std::vector<aligned_buffer> bufs;

  file_set(uint32_t count, uint64_t bytes_each) : bytes(bytes_each) {
    for (uint32_t i = 0; i < count; ++i) {
      paths.push_back(dir.file("f" + std::to_string(i)));
      std::ofstream out(paths.back(), std::ios::binary);
      const std::string body(bytes, char(i));
      out.write(body.data(), std::streamsize(body.size()));
    }
  }

  // One job per path of `names`, each into a buffer of its own; done(i, buffer, result) is job i's callback.
  template <class Done>
  std::vector<read_job> jobs(const std::vector<std::string>& names, Done done) {
    std::vector<read_job> out;
    for (uint32_t i = 0; i < names.size(); ++i) {
      bufs.push_back(make_aligned_buffer(bytes));
      read_job j;
      j.path = names[i];
      j.buffer = bufs.back().get();
      j.length = bytes;
      j.done = [done, i, buf = j.buffer](const read_result& r) { done(i, buf, r); };
      out.push_back(std::move(j));
    }
    return out;
  }
};

struct outcome {
  int calls = 0, error = -1;
  bool content_right = false;
};

}  // namespace

TEST_CASE("read engine: more jobs than slots each complete once, on its I/O thread, with their bytes") {
  constexpr uint32_t files = 40;
  file_set set(files, 4 * block_alignment);
  std::vector<outcome> seen(files + 1);
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::atomic<uint32_t> finished{0};
  bool uring = false;
  {
    read_engine engine(4, true);
    uring = engine.uses_io_uring();
    auto names = set.paths;
    names.push_back(set.dir.file("missing"));  // the last job names a file that does not exist
    auto jobs = set.jobs(names, [&](uint32_t i, const std::byte* buf, const read_result& r) {
      std::lock_guard<std::mutex> lock(mu);
      threads.insert(std::this_thread::get_id());
      auto& o = seen[i];
      ++o.calls;
      o.error = r.error;
      o.content_right = r.bytes_read == set.bytes;
      for (uint64_t b = 0; o.content_right && b < set.bytes; ++b) o.content_right = buf[b] == std::byte(i);
      ++finished;
    });
    engine.submit(std::move(jobs));
    for (int waited = 0; finished < files + 1 && waited < 1000; ++waited)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(finished == files + 1);
  for (uint32_t i = 0; i < files; ++i) {
    CAPTURE(i);
    CHECK(seen[i].calls == 1);
    CHECK(seen[i].error == 0);
    CHECK(seen[i].content_right);
  }
  CHECK(seen[files].calls == 1);
  CHECK(seen[files].error == ENOENT);
  if (uring) CHECK(threads.size() == 1);  // the I/O thread (the fallback's callbacks run on its pool's threads)
  CHECK(threads.count(std::this_thread::get_id()) == 0);
}

TEST_CASE("read engine: destroyed with jobs queued, it calls back every job before it returns") {
  constexpr uint32_t files = 64;
  file_set set(files, 16 * block_alignment);
  std::vector<std::atomic<int>> calls(files);
  std::atomic<int> ok{0}, cancelled{0}, other{0};
  {
    read_engine engine(2, true);
    auto jobs = set.jobs(set.paths, [&](uint32_t i, const std::byte*, const read_result& r) {
      ++calls[i];
      (r.error == 0 ? ok : r.error == ECANCELED ? cancelled : other)++;
      // A slow callback: the destructor must still wait for every one of them.
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    });
    engine.submit(std::move(jobs));
  }  // destroyed at once: most jobs are still queued
  for (uint32_t i = 0; i < files; ++i) CHECK(calls[i] == 1);
  CHECK(ok + cancelled == int(files));
  CHECK(other == 0);
  MESSAGE(ok.load() << " read, " << cancelled.load() << " cancelled");
}
