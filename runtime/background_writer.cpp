#include "runtime/background_writer.hpp"

namespace dualpath::runtime {

background_writer::background_writer() {
  thread_ = std::thread([this] {
    for (;;) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
    }
  });
}

background_writer::~background_writer() {
  {
    std::lock_guard<std::mutex> g(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void background_writer::post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> g(mutex_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

}  // namespace dualpath::runtime
