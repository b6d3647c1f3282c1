#pragma once
// Calls made at a given time on a thread of their own: a node's write-back is answered when the emulated SNIC
// would have sent the block (storage/write_pacer.hpp), while the block itself is written, and its copy freed,
// as soon as the store takes it (docs/design.md §9). Calls due at the same time run in the order given. stop()
// (and the destructor) runs every call still waiting at once, so nothing waits on a call that never comes.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace dualpath::runtime {

class due_calls {
 public:
  using clock = std::chrono::steady_clock;

  due_calls();
  ~due_calls();
  due_calls(const due_calls&) = delete;
  due_calls& operator=(const due_calls&) = delete;

  // Runs `f` at `when` (at once, on the calls' thread, if `when` has passed).
  void at(clock::time_point when, std::function<void()> f);
  void stop();
  size_t waiting() const;

 private:
  void run();

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::multimap<std::pair<clock::time_point, uint64_t>, std::function<void()>> calls_;  // (when, order)
  uint64_t next_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dualpath::runtime
