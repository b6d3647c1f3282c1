#include "serve/answer_check.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "cluster/verify.hpp"
#include "core/status.hpp"

namespace dualpath::serve {

answer_checker::answer_checker(const gpu::backend_options& options, size_t max_queued) : max_queued_(max_queued) {
  if (options.kind == backend_kind::modeled)
    throw user_error(
        "serve --verify: the modeled backend makes no real tokens to compare; serve a cpu or cuda "
        "cluster to verify");
  gpu::backend_options ref = options;
  ref.kind = backend_kind::cpu;  // the reference is the cpu backend's math, whatever the engines run on
  reference_ = gpu::make_backend(ref);
  thread_ = std::thread([this] { loop(); });
}

answer_checker::~answer_checker() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    counts_.skipped += queue_.size();
    queue_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

void answer_checker::submit(made_answer a) {
  {
    std::lock_guard lock(mu_);
    if (stop_ || queue_.size() >= max_queued_) {
      ++counts_.skipped;
      return;
    }
    queue_.push_back(std::move(a));
  }
  cv_.notify_one();
}

check_counts answer_checker::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

bool answer_checker::settle(std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  return idle_.wait_for(lock, wait, [&] { return queue_.empty() && !busy_; });
}

void answer_checker::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    made_answer a = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    const auto again = cluster::recompute_turn(*reference_, a.prompt, uint32_t(a.generated.size()), a.sample);
    const bool same = again == a.generated;
    if (!same)
      spdlog::error(
          "serve --verify: answer {} differs from a full recompute of its {}-token prompt from token {} of {}", a.id,
          a.prompt.size(),
          std::mismatch(again.begin(), again.end(), a.generated.begin(), a.generated.end()).first - again.begin(),
          a.generated.size());
    lock.lock();
    ++(same ? counts_.verified : counts_.mismatched);
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace dualpath::serve
