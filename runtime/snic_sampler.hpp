#pragma once
// A node's SNIC over time (docs/design.md §15, `snic_over_time`): the progress loop samples the bytes its SNIC
// gate has read so far and its read_q every `period`; the report turns the samples into 1 s windows. Samples
// carry steady-clock time, so the launcher can place them on its own run clock (one machine, one clock).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace dualpath::runtime {

struct snic_sample {
  int64_t t_ns = 0;         // steady_clock, since its epoch
  uint64_t read_bytes = 0;  // bytes read through the SNIC since the node started (cumulative)
  uint64_t read_q = 0;      // read_q at that moment
};

class snic_sampler {
 public:
  explicit snic_sampler(std::chrono::milliseconds period = std::chrono::milliseconds(20), size_t max_samples = size_t(1)
                                                                                                               << 16)
      : period_(period), max_samples_(max_samples) {}

  // True when a sample is due at `now` (cheap; no lock): the caller then reads its counters and record()s.
  bool due(std::chrono::steady_clock::time_point now) const { return now >= next_; }
  void record(std::chrono::steady_clock::time_point now, uint64_t read_bytes, uint64_t read_q);
  std::vector<snic_sample> samples() const;

 private:
  // A node that serves for days must not grow without bound: once `max_samples_` are kept, every other one is
  // dropped and the period doubles. The samples are cumulative, so coarser ones lose no bytes, only detail.
  std::chrono::milliseconds period_;  // written by the sampling thread only
  const size_t max_samples_;
  std::chrono::steady_clock::time_point next_{};  // written by the sampling thread only
  mutable std::mutex mutex_;
  std::vector<snic_sample> samples_;
};

}  // namespace dualpath::runtime
