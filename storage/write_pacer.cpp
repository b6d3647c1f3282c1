#include "storage/write_pacer.hpp"

#include <algorithm>
#include <thread>

namespace dualpath::storage {

namespace {
constexpr double catch_up_ns = 100e6;  // 100 ms of the cap, as the read side's bucket (snic_gate.hpp)
}

write_pacer::write_pacer(double cap_gb_per_s, uint64_t block_bytes)
    : bytes_per_ns_(cap_gb_per_s > 0 ? cap_gb_per_s : 0),  // 1 GB/s = 1 byte/ns
      depth_(bytes_per_ns_ > 0
                 ? std::chrono::nanoseconds(int64_t(std::max(catch_up_ns, double(block_bytes) / bytes_per_ns_)))
                 : clock::duration::zero()) {
  stats_.cap_gb_per_s = bytes_per_ns_;
}

write_pacer::clock::time_point write_pacer::reserve(uint64_t bytes, clock::time_point now) {
  std::lock_guard<std::mutex> g(mutex_);
  ++stats_.writes;
  stats_.bytes += bytes;
  if (bytes_per_ns_ <= 0) return now;
  // A link idle for longer than the depth starts at now (nothing banked); one that fell behind by less (a
  // write spent that long in the store) continues from where it is, so it catches up.
  if (link_free_ < now - depth_) link_free_ = now;
  const auto busy = std::chrono::nanoseconds(int64_t(double(bytes) / bytes_per_ns_));
  link_free_ += busy;
  stats_.link_busy_ns += uint64_t(busy.count());
  return link_free_;
}

void write_pacer::pace(uint64_t bytes) {
  const auto now = clock::now();
  const auto until = reserve(bytes, now);
  if (until <= now) return;
  std::this_thread::sleep_until(until);
  std::lock_guard<std::mutex> g(mutex_);
  stats_.waited_ns += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - now).count());
}

pacer_stats write_pacer::stats() const {
  std::lock_guard<std::mutex> g(mutex_);
  return stats_;
}

}  // namespace dualpath::storage
