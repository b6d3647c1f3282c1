#pragma once
// Rate cap of an emulated CNIC: a token bucket in bytes. A slice may start when the bucket is not in
// debt and then charges its full size, so the long-run rate equals the cap whatever the slice size,
// and the burst after an idle period is at most `burst_bytes`.
#include <chrono>
#include <cstdint>

namespace dualpath::transport {

class token_bucket {
 public:
  using clock = std::chrono::steady_clock;

  // rate_bytes_per_s <= 0 means uncapped. `start` is when the (empty) bucket begins to fill; it is on
  // the caller's clock, so an owner with a fake clock gets a bucket that follows it.
  token_bucket(double rate_bytes_per_s, double burst_bytes, clock::time_point start = clock::now());

  bool capped() const { return rate_ > 0; }
  // True when a slice may start at `now`: the bucket is not in debt, or in less than `allowance` bytes
  // of it (a priority class may go ahead of the debt that bulk traffic left).
  bool ready(clock::time_point now, double allowance = 0);
  void charge(uint64_t bytes);
  // How long until ready() turns true (zero when ready or uncapped).
  std::chrono::nanoseconds wait_time(clock::time_point now);

 private:
  void refill(clock::time_point now);

  double rate_;
  double burst_;
  double tokens_ = 0;
  clock::time_point last_;
};

}  // namespace dualpath::transport
