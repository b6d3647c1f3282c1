#pragma once
// Posting side of an endpoint (docs/design.md §8): which queued slice goes to the provider next and
// when. The arbiter orders the two classes, per-class windows keep a posting slot free for model
// traffic, the kv guard keeps kv small next to model traffic on stream providers, and a token bucket
// per direction caps the rate like a CNIC. Everything is decided against the abstract `poster` and an
// injectable clock, so tests drive it with a fake provider and fake time.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "transport/arbiter.hpp"
#include "transport/endpoint.hpp"
#include "transport/poster.hpp"
#include "transport/token_bucket.hpp"
#include "transport/transfer_table.hpp"

namespace dualpath::transport {

class scheduler {
 public:
  using now_fn = std::function<time_point()>;

  // `kv_guard`: kv slice size next to model traffic, 0 = no guard (see kv_guard_for()).
  scheduler(const fabric_options& opts, uint64_t kv_guard, transfer_table& table, poster& provider,
            now_fn now = std::chrono::steady_clock::now);

  // The guard fabric_options asks for on a provider of this kind: only stream providers (tcp, sockets)
  // queue a model slice behind every kv byte posted before it, so only they get one by default.
  static uint64_t kv_guard_for(const fabric_options& opts, bool stream_provider);

  // Opens a transfer for `r` in the table and queues its slices.
  uint64_t submit(const transfer_request& r);
  // Posts what the arbiter, the windows, the guard and the caps allow now. Bounded work per call.
  void schedule();
  // A posted slice landed: it may release the held slice carrying remote data.
  void completed(uint64_t slice_id);

  // See endpoint::poll_delay().
  std::optional<std::chrono::nanoseconds> poll_delay();
  uint64_t queued() const { return arb_.size(); }
  uint64_t kv_guard() const { return kv_guard_; }
  time_point now() const { return now_(); }

 private:
  bool guard_on(time_point now) const;
  // Whether a slice of `tc` and `length` bytes fits the posting windows now.
  bool room_for(traffic_class tc, uint64_t length, bool guard) const;
  void split_front(uint64_t slice_id);
  // Takes the arbiter's head out for good and fails its transfer.
  void reject_front(uint64_t slice_id, const std::string& why);

  fabric_options opts_;
  uint64_t kv_guard_;
  uint32_t kv_window_;  // posting slots kv may fill
  transfer_table& table_;
  poster& provider_;
  now_fn now_;
  arbiter arb_;
  token_bucket tx_bucket_;  // writes leave through this CNIC
  token_bucket rx_bucket_;  // reads come in through it
};

}  // namespace dualpath::transport
