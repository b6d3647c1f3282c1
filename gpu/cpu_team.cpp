#include "gpu/cpu_team.hpp"

#include <sched.h>

#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <utility>

namespace dualpath::gpu {

namespace {

// How long a thread of the team polls before it sleeps: a decode step's runs (about ten a layer) follow each
// other within microseconds, and a sleeping thread's wake-up costs tens of them. Measured on the small model's
// decode step (bench compute): 8.0 ms of linear layers without polling, 6.7 with 50 µs, 6.1 with 200 µs.
// Bounded, so an idle engine's team still sleeps (design §10).
constexpr auto spin_for = std::chrono::microseconds(200);

void pause_briefly() {
#if defined(__x86_64__)
  for (int i = 0; i < 64; ++i) __builtin_ia32_pause();
#endif
}

template <class Ready>
void spin_until(Ready ready) {
  const auto until = std::chrono::steady_clock::now() + spin_for;
  while (!ready()) {
    pause_briefly();
    if (std::chrono::steady_clock::now() >= until) return;
  }
}

}  // namespace

unsigned usable_cores() {
  // DUALPATH_CPU_THREADS caps each cpu backend's team (several engines in one process each have one).
  if (const char* env = std::getenv("DUALPATH_CPU_THREADS"); env && std::atoi(env) > 0) return unsigned(std::atoi(env));
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

cpu_team::cpu_team(unsigned threads) {
  const unsigned n = threads ? threads : usable_cores();
  for (unsigned m = 1; m < n; ++m) workers_.emplace_back([this, m] { work(m); });
}

cpu_team::~cpu_team() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

// Takes tasks until none is left; the lock is held only to hand one out or to count one done.
void cpu_team::drain(unsigned member) {
  std::unique_lock lock(mu_);
  while (next_ < tasks_) {
    const size_t task = next_++;
    const auto* fn = fn_;
    lock.unlock();
    try {
      (*fn)(task, member);
    } catch (...) {
      lock.lock();
      if (!error_) error_ = std::current_exception();
      finished_ += 1 + (tasks_ - next_);  // this task, and the rest skipped: the run fails as a whole
      next_ = tasks_;
      continue;
    }
    lock.lock();
    ++finished_;
  }
}

void cpu_team::work(unsigned member) {
  uint64_t seen = 0;
  std::unique_lock lock(mu_);
  for (;;) {
    lock.unlock();
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
    lock.lock();
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    ++busy_;
    lock.unlock();
    drain(member);
    lock.lock();
    if (--busy_ == 0) done_.notify_all();
  }
}

void cpu_team::run(size_t tasks, const std::function<void(size_t, unsigned)>& fn, bool parallel) {
  if (tasks == 0) return;
  if (workers_.empty() || tasks == 1 || !parallel) {
    for (size_t t = 0; t < tasks; ++t) fn(t, 0);
    return;
  }
  {
    std::lock_guard lock(mu_);
    fn_ = &fn;
    tasks_ = tasks;
    next_ = finished_ = 0;
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  drain(0);
  spin_until([&] {
    std::lock_guard g(mu_);
    return finished_ == tasks_ && busy_ == 0;
  });
  std::unique_lock lock(mu_);
  // Every task handed out has finished and no worker still holds fn_ (a late waker sees no task left).
  done_.wait(lock, [&] { return finished_ == tasks_ && busy_ == 0; });
  fn_ = nullptr;
  tasks_ = 0;
  if (auto e = std::exchange(error_, nullptr)) std::rethrow_exception(e);
}

void cpu_team::split(size_t n, const std::function<void(size_t, size_t, unsigned)>& fn, size_t grain) {
  if (n == 0) return;
  const size_t parts = std::clamp<size_t>(n / std::max<size_t>(grain, 1), 1, size());
  run(parts, [&](size_t p, unsigned member) { fn(n * p / parts, n * (p + 1) / parts, member); });
}

}  // namespace dualpath::gpu
