#pragma once
// Bookkeeping of one endpoint's transfers (docs/design.md §8): the slices each write()/read() was cut
// into, which of them the provider holds, and the bytes and slices in flight per traffic class, which
// is what the scheduler's windows and the kv guard decide on. Pure data, no libfabric: a provider
// completion names a slice id, and everything else is found from it by hash lookup.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "transport/endpoint.hpp"

namespace dualpath::transport {

using time_point = std::chrono::steady_clock::time_point;

// A local piece of a gathered write (endpoint::write_gather): the provider reads the pieces in order.
struct local_piece {
  std::byte* at = nullptr;
  uint64_t length = 0;
};

// One RMA operation as the provider sees it: a contiguous piece of one transfer, or (a gathered write)
// pieces of local memory into one contiguous remote range.
struct slice {
  uint64_t id = 0;
  uint64_t transfer = 0;
  traffic_class tc = traffic_class::kv;
  uint32_t peer = 0;
  bool is_write = true;
  bool carries_data = false;  // posted with `data` as remote completion data
  uint64_t data = 0;
  std::byte* local = nullptr;
  void* desc = nullptr;  // the local region's provider descriptor; opaque here
  uint64_t remote_addr = 0;
  uint64_t key = 0;
  uint64_t length = 0;
  std::vector<local_piece> pieces;  // a gathered write's local pieces (length their sum); empty: `local`
  bool posted = false;
  std::optional<time_point> first_attempt;  // a provider that keeps saying "try again" times out from here
  time_point posted_at{};
};

// A validated write()/read(), in the provider's terms.
struct transfer_request {
  uint64_t context = 0;
  traffic_class tc = traffic_class::kv;
  bool is_write = true;
  uint32_t peer = 0;
  std::byte* local = nullptr;
  void* desc = nullptr;
  uint64_t remote_addr = 0;
  uint64_t key = 0;
  uint64_t length = 0;
  std::optional<uint64_t> remote_data;
  std::vector<local_piece> pieces;  // a gathered write: one slice, never cut (length <= slice_bytes)
};

// The caller's part of a request; the provider's part (local, desc, remote_addr, key) is filled in
// when the regions are resolved.
inline transfer_request make_transfer_request(traffic_class tc, bool is_write, uint32_t peer, uint64_t length,
                                              uint64_t context, std::optional<uint64_t> remote_data = {}) {
  return {context,           tc,        is_write, peer,        /*local*/ nullptr, /*desc*/ nullptr,
          /*remote_addr*/ 0, /*key*/ 0, length,   remote_data, /*pieces*/ {}};
}

struct inflight_count {
  uint32_t slices = 0;
  uint64_t bytes = 0;
};

class transfer_table {
 public:
  // Starts a transfer without slices and returns its id. Ids are internal and never reused: callers may
  // repeat a context, and a late completion of a failed transfer must not land on a newer one.
  uint64_t open(uint64_t context, traffic_class tc, uint32_t peer, uint64_t bytes, time_point now);
  // Cuts `r` into slices of at most `slice_bytes` and returns the ids to queue, in order. When a
  // multi-slice write carries remote data, its last slice is held back (not returned) until all the
  // others have landed: not every provider keeps slices in order, and the peer's notification must
  // not overtake the data.
  std::vector<uint64_t> add_slices(uint64_t transfer, const transfer_request& r, uint64_t slice_bytes);

  struct split_result {
    uint64_t rest = 0;
    bool held = false;  // the rest carries the remote data: it waits as the held slice, not in a queue
  };
  // Shrinks queued slice `id` to `head_bytes`; the remainder becomes a new slice of the same transfer. Not for a
  // gathered write's slice (the scheduler posts those whole).
  split_result split(uint64_t id, uint64_t head_bytes);

  slice* find_slice(uint64_t id);
  bool has_transfer(uint64_t id) const { return transfers_.count(id) != 0; }
  // Forgets a slice that will never be posted (its transfer failed, or the post was refused).
  void drop(uint64_t id);

  void mark_posted(uint64_t id, time_point now);
  // A posted slice landed. Returns the held slice that may now be queued, if this released it.
  // Completions of slices this table no longer knows (their transfer failed) are ignored.
  std::optional<uint64_t> complete(uint64_t id, time_point now);
  // Ends the transfer with an error completion. Its posted slices stop counting as in flight at once
  // (the provider may still complete them; complete() then ignores them); queued ones are dropped when
  // the scheduler reaches them.
  void fail(uint64_t transfer, const std::string& why, time_point now);

  struct overdue {
    uint64_t transfer = 0;
    uint32_t peer = 0;
  };
  // Transfers with a slice posted longer ago than `timeout`.
  std::vector<overdue> expired(time_point now, std::chrono::nanoseconds timeout) const;

  // Completions since the last call; also restarts the model_ready() count.
  std::vector<completion> take_completions();
  bool has_completions() const { return !done_.empty(); }
  // Model transfers finished since the last take_completions(): the scheduler yields to hand them out.
  uint32_t model_ready() const { return model_ready_; }
  // Model transfers opened and not finished.
  uint32_t model_pending() const { return model_pending_; }
  // Last time a model transfer was opened or finished.
  std::optional<time_point> last_model() const { return last_model_; }

  inflight_count inflight(traffic_class tc) const { return inflight_[index(tc)]; }
  uint32_t inflight_slices() const { return static_cast<uint32_t>(posted_.size()); }
  bool busy() const { return !transfers_.empty() || !done_.empty(); }
  const class_stats& stats(traffic_class tc) const { return stats_[index(tc)]; }

 private:
  struct transfer {
    uint64_t context = 0;
    traffic_class tc = traffic_class::kv;
    uint32_t peer = 0;
    uint64_t bytes = 0;
    uint64_t slices_total = 0;
    uint64_t slices_done = 0;
    uint64_t held = 0;             // id of the held slice with remote data; 0 = none
    std::vector<uint64_t> posted;  // its slices the provider holds (at most a window)
  };

  static int index(traffic_class tc) { return tc == traffic_class::model ? 0 : 1; }
  uint64_t add(slice s);
  // The only place that changes what counts as in flight.
  void account(const slice& s, bool posting);
  void finish(uint64_t transfer, bool ok, const std::string& why, time_point now);

  // The warning a failed transfer logs, once per peer and reason a second: a lost node fails every slice
  // queued to it at once, and one line per transfer would bury the log (the rest are counted in the next).
  struct failure_log {
    std::string why;
    time_point logged{};
    uint64_t unlogged = 0;
  };
  void log_failure(const transfer& t, const std::string& why, time_point now);
  std::unordered_map<uint32_t, failure_log> failure_logs_;  // by peer
  std::unordered_map<uint64_t, transfer> transfers_;
  std::unordered_map<uint64_t, slice> slices_;
  std::unordered_set<uint64_t> posted_;
  inflight_count inflight_[2];
  class_stats stats_[2];
  std::vector<completion> done_;
  uint32_t model_ready_ = 0;
  uint32_t model_pending_ = 0;
  std::optional<time_point> last_model_;
  uint64_t next_transfer_ = 1;
  uint64_t next_slice_ = 1;
};

}  // namespace dualpath::transport
