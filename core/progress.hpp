#pragma once
// Work this process has done: prefill layers run and decode steps taken. The launcher's stall check reads
// it beside finished turns and bytes read, so a long turn that is still computing is not called a stall
// and a run where nothing moves still is (docs/design.md §13).
#include <atomic>
#include <cstdint>

namespace dualpath::progress {

inline std::atomic<uint64_t>& work_units() {
  static std::atomic<uint64_t> units{0};
  return units;
}

inline void count_work() { work_units().fetch_add(1, std::memory_order_relaxed); }

// Nanoseconds this process's prefill engines spent in passes (a pass counts when it ends): adaptive P/D's
// prefill busy time per window (docs/design.md §7.9).
inline std::atomic<uint64_t>& prefill_busy_ns() {
  static std::atomic<uint64_t> ns{0};
  return ns;
}

}  // namespace dualpath::progress
