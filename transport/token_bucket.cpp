#include "transport/token_bucket.hpp"

#include <algorithm>

namespace dualpath::transport {

token_bucket::token_bucket(double rate_bytes_per_s, double burst_bytes, clock::time_point start)
    : rate_(rate_bytes_per_s), burst_(burst_bytes), last_(start) {}

void token_bucket::refill(clock::time_point now) {
  if (now <= last_) return;
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(burst_, tokens_ + elapsed * rate_);
  last_ = now;
}

bool token_bucket::ready(clock::time_point now, double allowance) {
  if (!capped()) return true;
  refill(now);
  return tokens_ >= -allowance;
}

void token_bucket::charge(uint64_t bytes) {
  if (capped()) tokens_ -= static_cast<double>(bytes);
}

std::chrono::nanoseconds token_bucket::wait_time(clock::time_point now) {
  if (!capped()) return std::chrono::nanoseconds{0};
  refill(now);
  if (tokens_ >= 0) return std::chrono::nanoseconds{0};
  return std::chrono::nanoseconds{static_cast<int64_t>(-tokens_ / rate_ * 1e9) + 1};
}

}  // namespace dualpath::transport
