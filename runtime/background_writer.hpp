#pragma once
// One background thread for a node's slow storage calls (persisting filled blocks, the oracle's direct
// loads), so they never stall the progress loop that drives transfers. Tasks run in order; the destructor
// runs what is queued, then joins.
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace dualpath::runtime {

class background_writer {
 public:
  background_writer();
  ~background_writer();
  background_writer(const background_writer&) = delete;
  background_writer& operator=(const background_writer&) = delete;

  void post(std::function<void()> task);

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dualpath::runtime
