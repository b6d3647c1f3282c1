#pragma once
// The write direction of a node's emulated storage NIC (docs/design.md §9, §15): block writes leave through
// the node's SNIC at its cap, the same `snic_gb_per_s` its reads are held to (the link is full duplex, so
// reads and writes each have the whole cap). The node's background writer calls pace() before each write;
// the call returns once the block's bytes could have left at the cap.
//
// Pacing is a virtual link clock: a write of B bytes occupies the link for B / cap after the previous
// write's end, or after now when the link has been idle longer than the catch-up depth (100 ms of the cap,
// at least one block): the link may make up for the time a write spent in the store (fsync, rename), but
// an idle link does not bank bandwidth. So over any busy stretch at most cap × (elapsed + depth) bytes
// leave. Uncapped (cap 0) it never waits and only counts.
#include <chrono>
#include <cstdint>
#include <mutex>

namespace dualpath::storage {

struct pacer_stats {
  uint64_t writes = 0;
  uint64_t bytes = 0;         // bytes that left through the link
  uint64_t waited_ns = 0;     // time callers spent in pace()
  uint64_t link_busy_ns = 0;  // Σ bytes / cap: the link time those bytes took at the cap (0 uncapped)
  double cap_gb_per_s = 0;    // 0 = uncapped
};

class write_pacer {
 public:
  using clock = std::chrono::steady_clock;

  // `cap_gb_per_s` (1 GB = 1e9 bytes); 0 = uncapped. `block_bytes` sizes the catch-up depth.
  explicit write_pacer(double cap_gb_per_s, uint64_t block_bytes = 0);

  // Waits until `bytes` may have left at the cap, counting them. Thread-safe; concurrent callers queue on
  // the same link.
  void pace(uint64_t bytes);
  // The accounting alone, with the caller's clock: when a write of `bytes` asked for at `now` has left.
  // pace() is this plus a sleep; tests drive it with a made-up clock.
  clock::time_point reserve(uint64_t bytes, clock::time_point now);

  pacer_stats stats() const;

 private:
  const double bytes_per_ns_;    // 0 = uncapped
  const clock::duration depth_;  // how far the link clock may lag behind now
  mutable std::mutex mutex_;
  clock::time_point link_free_{};  // when the link has sent everything reserved so far
  pacer_stats stats_;
};

}  // namespace dualpath::storage
