#pragma once
// A fork-join team of threads for the cpu backend (docs/design.md §10). The backend runs OpenBLAS single-
// threaded and splits its own work (GEMM columns, attention heads and tiles, row kernels) across the team,
// so the serial steps between GEMMs run in parallel too and no BLAS thread spins while the caller works
// alone. A worker that finishes polls for the next run for 200 µs (a decode step's runs come microseconds
// apart), then sleeps on a condition variable: several engines in one process each own a team and must not
// burn each other's cores.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dualpath::gpu {

class cpu_team {
 public:
  // `threads` counts the caller; 0 means every core this process may run on.
  explicit cpu_team(unsigned threads = 0);
  ~cpu_team();
  cpu_team(const cpu_team&) = delete;
  cpu_team& operator=(const cpu_team&) = delete;

  unsigned size() const { return unsigned(workers_.size()) + 1; }

  // Calls fn(task, member) for every task in [0, tasks), handing tasks out one at a time in order (put the
  // biggest first); member < size() names the thread, for per-thread scratch. Returns when all are done and
  // rethrows the first exception a task threw. One run at a time per team (the engine's thread calls it).
  // With parallel = false the caller runs them all itself: waking the team costs tens of microseconds,
  // more than a small model's whole layer.
  void run(size_t tasks, const std::function<void(size_t task, unsigned member)>& fn, bool parallel = true);

  // Splits [0, n) into contiguous chunks of at least `grain` (at most size() of them): fn(begin, end, member).
  void split(size_t n, const std::function<void(size_t begin, size_t end, unsigned member)>& fn, size_t grain = 1);

 private:
  void work(unsigned member);
  void drain(unsigned member);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(size_t, unsigned)>* fn_ = nullptr;
  size_t tasks_ = 0, next_ = 0, finished_ = 0;
  unsigned busy_ = 0;  // workers inside the current run
  std::atomic<uint64_t> generation_{0};
  bool stop_ = false;
  std::exception_ptr error_;
};

// Work that streams memory with little arithmetic on each byte (the GEMM's weights at a decode step's few rows, the decode
// attention's KV) is shared out by bytes read, at least this many a thread: 256 KB take about 17 µs at one
// core's bandwidth, several times a team run's cost. Sized in FLOPs instead, a one-request decode step kept
// every linear layer on one core, and its attention too below about 2K tokens of context.
constexpr uint64_t min_stream_bytes_per_thread = uint64_t(1) << 18;

// Cores this process may run on (its affinity mask), at least 1.
unsigned usable_cores();

}  // namespace dualpath::gpu
