#include "runtime/due_calls.hpp"

#include <vector>

namespace dualpath::runtime {

due_calls::due_calls() : thread_([this] { run(); }) {}

due_calls::~due_calls() { stop(); }

void due_calls::at(clock::time_point when, std::function<void()> f) {
  {
    std::lock_guard<std::mutex> g(mutex_);
    if (!stop_) {
      calls_.emplace(std::make_pair(when, next_++), std::move(f));
      wake_.notify_one();
      return;
    }
  }
  f();  // stopped: nothing would run it later
}

void due_calls::stop() {
  {
    std::lock_guard<std::mutex> g(mutex_);
    if (stop_) return;
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

size_t due_calls::waiting() const {
  std::lock_guard<std::mutex> g(mutex_);
  return calls_.size();
}

void due_calls::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (stop_) break;
    if (calls_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const auto when = calls_.begin()->first.first;
    if (clock::now() < when) {
      wake_.wait_until(lock, when);
      continue;
    }
    auto f = std::move(calls_.begin()->second);
    calls_.erase(calls_.begin());
    lock.unlock();
    f();
    lock.lock();
  }
  // Stopping: every call still waiting runs now, in order.
  std::vector<std::function<void()>> left;
  for (auto& [key, f] : calls_) left.push_back(std::move(f));
  calls_.clear();
  lock.unlock();
  for (auto& f : left) f();
}

}  // namespace dualpath::runtime
