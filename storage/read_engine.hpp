#pragma once
// Batched asynchronous file reads through one io_uring owned by one I/O thread. Jobs wait in a FIFO
// until one of `depth` slots is free; the thread opens the file (O_DIRECT where allowed), reads it
// whole into the job's buffer (resubmitting after short reads) and calls the job's callback.
// Where io_uring is not available (a seccomp policy refuses it, an old kernel) or the environment
// sets DUALPATH_STORAGE_NO_URING=1, a pool of threads does blocking preads instead: same results.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/block_files.hpp"

namespace dualpath::storage {

struct read_result {
  int error = 0;            // errno of open/read (ENOENT for a missing file), 0 on success
  uint64_t file_size = 0;   // size of the file as opened
  uint64_t bytes_read = 0;  // bytes placed in the buffer
  file_id id;               // the version of the file that was read (when it opened)
};

struct read_job {
  std::string path;
  std::byte* buffer = nullptr;                   // aligned to block_alignment
  uint64_t length = 0;                           // multiple of block_alignment
  std::function<void(const read_result&)> done;  // runs on the I/O thread
  int refuse = 0;  // non-zero: do not read, complete with this errno (a request found invalid)
};

class read_engine {
 public:
  read_engine(uint32_t depth, bool direct);
  ~read_engine();  // finishes jobs in flight, fails queued ones with ECANCELED
  read_engine(const read_engine&) = delete;
  read_engine& operator=(const read_engine&) = delete;

  void submit(std::vector<read_job> jobs);
  bool direct() const { return direct_.load(); }
  bool uses_io_uring() const { return ring_ != nullptr; }

 private:
  struct slot;
  void run();
  void start_job(slot& s);
  void queue_read(slot& s);
  void wake();
  void run_blocking();  // one thread of the fallback pool
  static read_result read_whole(const read_job& job, bool* direct);

  uint32_t depth_;
  std::atomic<bool> direct_;
  std::atomic<bool> stop_{false};
  int event_fd_ = -1;
  void* ring_ = nullptr;  // io_uring, kept out of this header
  std::mutex mu_;
  std::deque<read_job> queue_;
  std::vector<slot*> slots_;
  std::thread thread_;
  std::condition_variable cv_;  // fallback pool: new jobs or stop
  std::vector<std::thread> pool_;
};

}  // namespace dualpath::storage
