#include "runtime/snic_sampler.hpp"

namespace dualpath::runtime {

void snic_sampler::record(std::chrono::steady_clock::time_point now, uint64_t read_bytes, uint64_t read_q) {
  const int64_t t = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  std::lock_guard<std::mutex> g(mutex_);
  if (samples_.size() >= max_samples_ && max_samples_ >= 2) {
    size_t kept = 0;
    for (size_t i = 0; i < samples_.size(); i += 2) samples_[kept++] = samples_[i];
    samples_.resize(kept);
    period_ *= 2;
  }
  samples_.push_back({t, read_bytes, read_q});
  next_ = now + period_;
}

std::vector<snic_sample> snic_sampler::samples() const {
  std::lock_guard<std::mutex> g(mutex_);
  return samples_;
}

}  // namespace dualpath::runtime
