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

}  // namespace dualpath::progress
