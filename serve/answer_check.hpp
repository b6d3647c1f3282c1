#pragma once
// `serve --verify` (docs/design.md §18): every answer the cluster made is recomputed from scratch on the cpu
// backend with the run's weights and the answer's own sampling (a draw depends only on the seed and the
// position, gpu/sampling.hpp), and compared token by token. The recompute runs on its own thread and backend,
// off the requests' path, so verification does not slow the answers it checks.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpu/backend.hpp"

namespace dualpath::serve {

// One answer to check: the turn's prompt ids, the tokens the engines made, and how they were picked.
struct made_answer {
  std::string id;  // the answer's id, named when it mismatches
  std::vector<int32_t> prompt, generated;
  gpu::sampling sample;
};

struct check_counts {
  uint64_t verified = 0;    // recomputed and equal
  uint64_t mismatched = 0;  // recomputed and different
  uint64_t skipped = 0;     // not recomputed: the queue was full, or the server stopped first
};

class answer_checker {
 public:
  // `options`: the served cluster's backend; its kind must make real tokens (cpu or cuda), else user_error.
  // At most `max_queued` answers wait; past that an answer is skipped (counted), never the request slowed.
  explicit answer_checker(const gpu::backend_options& options, size_t max_queued = 4096);
  ~answer_checker();  // answers still queued are counted as skipped
  answer_checker(const answer_checker&) = delete;
  answer_checker& operator=(const answer_checker&) = delete;

  void submit(made_answer a);
  check_counts counts() const;
  // Waits up to `wait` until every submitted answer has been recomputed; false if some still wait.
  bool settle(std::chrono::milliseconds wait);

 private:
  void loop();

  std::unique_ptr<gpu::compute_backend> reference_;
  size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable cv_;    // work arrived, or stop
  std::condition_variable idle_;  // the queue ran empty
  std::deque<made_answer> queue_;
  bool busy_ = false, stop_ = false;
  check_counts counts_;
  std::thread thread_;
};

}  // namespace dualpath::serve
