#pragma once
// Admission of `dualpath serve` (docs/design.md §18): a request gets a serving client (one of `requests`), a
// place among the requests waiting for their first token (`waiting`) and room for its prompt among their
// queued tokens (`queued_tokens`, 0 = unbounded) at once, or it is answered 429 naming the bound. The bounds
// are the cluster file's [serve] keys; the scheduler's queue holds at most the admitted requests.
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace dualpath::serve {

struct admission_limits {
  uint32_t requests = 8;
  uint32_t waiting = 8;
  uint64_t queued_tokens = 0;
};

class admission {
 public:
  struct ticket {
    uint32_t client = 0;
    uint64_t tokens = 0;
    bool waiting = true;
  };

  explicit admission(admission_limits l) : limits_(l) {
    for (uint32_t i = l.requests; i-- > 0;) free_.push_back(i);
  }
  // A ticket for a request of `prompt_tokens`, or what is full.
  std::variant<ticket, std::string> admit(uint64_t prompt_tokens) {
    std::lock_guard lock(mutex_);
    if (free_.empty()) return "all " + std::to_string(limits_.requests) + " requests the server runs at once";
    if (waiting_ + 1 > limits_.waiting)
      return std::to_string(limits_.waiting) + " requests waiting for their first token (serve.max_waiting)";
    if (limits_.queued_tokens > 0 && queued_ + prompt_tokens > limits_.queued_tokens)
      return std::to_string(queued_) + " prompt tokens queued of at most " + std::to_string(limits_.queued_tokens) +
             " (serve.max_queued_tokens)";
    ticket t{free_.back(), prompt_tokens, true};
    free_.pop_back();
    ++waiting_;
    queued_ += prompt_tokens;
    return t;
  }
  // The request's first token came: it waits no more.
  void started(ticket& t) {
    std::lock_guard lock(mutex_);
    leave_waiting(t);
  }
  void release(ticket& t) {
    std::lock_guard lock(mutex_);
    leave_waiting(t);
    free_.push_back(t.client);
  }
  uint32_t running() const {
    std::lock_guard lock(mutex_);
    return limits_.requests - uint32_t(free_.size());
  }
  uint32_t capacity() const { return limits_.requests; }
  // Whether a prompt this long could ever be admitted (no retry helps one that cannot).
  bool could_queue(uint64_t prompt_tokens) const {
    return limits_.queued_tokens == 0 || prompt_tokens <= limits_.queued_tokens;
  }
  uint64_t queued_tokens_limit() const { return limits_.queued_tokens; }

 private:
  void leave_waiting(ticket& t) {
    if (!t.waiting) return;
    t.waiting = false;
    --waiting_;
    queued_ -= t.tokens;
  }
  admission_limits limits_;
  mutable std::mutex mutex_;
  std::vector<uint32_t> free_;
  uint32_t waiting_ = 0;
  uint64_t queued_ = 0;
};

}  // namespace dualpath::serve
