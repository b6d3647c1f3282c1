#include "transport/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dualpath::transport {

scheduler::scheduler(const fabric_options& opts, uint64_t kv_guard, transfer_table& table, poster& provider, now_fn now)
    : opts_(opts),
      kv_guard_(kv_guard),
      // With isolation, kv never fills the whole window: a model slice can always be posted at once.
      kv_window_(opts.isolation ? std::max<uint32_t>(1, opts.max_inflight - 1) : opts.max_inflight),
      table_(table),
      provider_(provider),
      now_(std::move(now)),
      arb_(opts.isolation, opts.kv_share),
      tx_bucket_(opts.rate_gb_per_s * 1e9, static_cast<double>(opts.slice_bytes), now_()),
      rx_bucket_(opts.rate_gb_per_s * 1e9, static_cast<double>(opts.slice_bytes), now_()) {}

uint64_t scheduler::kv_guard_for(const fabric_options& opts, bool stream_provider) {
  uint64_t guard = opts.kv_guard_bytes ? opts.kv_guard_bytes : (stream_provider ? uint64_t{32} << 10 : 0);
  // One FIFO has no model lane to protect, and slices already that small need no cutting.
  if (!opts.isolation || guard >= opts.slice_bytes) guard = 0;
  return guard;
}

uint64_t scheduler::submit(const transfer_request& r) {
  const uint64_t id = table_.open(r.context, r.tc, r.peer, r.length, now_());
  for (uint64_t sid : table_.add_slices(id, r, opts_.slice_bytes)) {
    arb_.push(arbiter_item{r.tc, sid, table_.find_slice(sid)->length, r.peer});
  }
  return id;
}

void scheduler::completed(uint64_t slice_id) {
  if (const auto held = table_.complete(slice_id, now_())) {
    // It keeps the turn its transfer had: it is the last piece the peer waits for.
    const slice& s = *table_.find_slice(*held);
    arb_.push_front(arbiter_item{s.tc, s.id, s.length, s.peer});
  }
}

bool scheduler::guard_on(time_point now) const {
  if (kv_guard_ == 0) return false;
  if (table_.model_pending() > 0) return true;
  const auto last = table_.last_model();
  return last && now - *last < opts_.model_guard;
}

bool scheduler::room_for(traffic_class tc, uint64_t length, bool guard) const {
  const auto model = table_.inflight(traffic_class::model);
  const auto kv = table_.inflight(traffic_class::kv);
  const uint64_t slot = opts_.slice_bytes;
  const uint64_t slots = opts_.max_inflight;
  if (!opts_.isolation) return model.slices + kv.slices < slots;
  // kv occupies posting slots by its bytes (kv slices may be finer than slice_bytes).
  if (tc == traffic_class::model) return model.slices + (kv.bytes + slot - 1) / slot < slots;
  // While a model slice is in flight, new kv bytes would only add work ahead of its completion on both
  // ends of the stream; kv waits unless its share is due (model slices queued behind it).
  if (guard && model.slices > 0 && !arb_.model_waiting()) return false;
  const uint64_t window = uint64_t{kv_window_} * slot;
  const uint64_t limit = guard ? std::min(kv_guard_, window) : window;
  if (kv.bytes > 0 && kv.bytes + length > limit) return false;
  return uint64_t{model.slices} * slot + kv.bytes + length <= slots * slot;
}

// Cuts the arbiter's head (a kv slice) after kv_guard bytes; the rest keeps its turn right behind it,
// unless it carries the remote data, which stays held until every other slice has landed.
void scheduler::split_front(uint64_t slice_id) {
  const auto cut = table_.split(slice_id, kv_guard_);
  std::optional<arbiter_item> behind;
  if (!cut.held) {
    const slice& rest = *table_.find_slice(cut.rest);
    behind = arbiter_item{traffic_class::kv, cut.rest, rest.length, rest.peer};
  }
  arb_.split_kv_front(kv_guard_, behind);
}

void scheduler::reject_front(uint64_t slice_id, const std::string& why) {
  arb_.pop();
  const uint64_t transfer = table_.find_slice(slice_id)->transfer;
  table_.drop(slice_id);
  table_.fail(transfer, why, now_());
}

void scheduler::schedule() {
  // Bounded work per call: with providers that copy inside the post call, the owner's thread must come
  // back between at most a window of slices, or a model transfer submitted meanwhile would wait.
  // The budget is in bytes so that finer kv slices do not shrink the work per call.
  const bool guard = guard_on(now_());
  for (uint64_t budget = uint64_t{opts_.max_inflight} * opts_.slice_bytes; budget > 0;) {
    const auto item = arb_.peek();
    if (!item) return;
    slice* s = table_.find_slice(item->id);
    if (!s || !table_.has_transfer(s->transfer)) {
      arb_.pop();  // its transfer already failed
      table_.drop(item->id);
      continue;
    }
    if (status up = provider_.reachable(s->peer); !up.ok()) {
      reject_front(s->id, fmt::format("peer {} is unreachable: {}", s->peer, up.message()));
      continue;
    }
    if (guard && item->tc == traffic_class::kv && s->length > kv_guard_ && s->pieces.empty()) {
      split_front(s->id);  // next to model traffic, kv goes in guard-sized pieces
      continue;
    }
    if (!room_for(item->tc, s->length, guard)) return;
    const auto now = now_();
    auto& bucket = s->is_write ? tx_bucket_ : rx_bucket_;
    // A priority lane does not wait for the debt bulk traffic left in the bucket: model may go while
    // the debt is under one slice. Its bytes are still charged, so kv pays them back and the long-run
    // rate stays at the cap; model alone beyond the cap is throttled like everything else.
    const double allowance =
        opts_.isolation && item->tc == traffic_class::model ? static_cast<double>(opts_.slice_bytes) : 0.0;
    if (!bucket.ready(now, allowance)) return;
    if (!s->first_attempt) s->first_attempt = now;
    const auto result = provider_.post(*s);
    if (result.status == post_result::try_again) {
      if (now - *s->first_attempt > opts_.timeout) {
        reject_front(s->id, fmt::format("provider queue to peer stayed full for {} ms", opts_.timeout.count()));
        continue;
      }
      return;  // needs progress first
    }
    const uint64_t length = s->length;
    budget -= std::min(budget, length);
    if (result.status == post_result::refused) {
      reject_front(s->id, result.error);
      continue;
    }
    arb_.pop();
    bucket.charge(length);
    table_.mark_posted(s->id, now);
    if (opts_.isolation) {
      // Some providers copy inside the post call (shm with CMA), so each kv post is real work done
      // on the owner's thread. Once a model transfer has finished, hand control back so its owner
      // sees it now rather than after a window of kv copies.
      provider_.progress();
      if (table_.model_ready() > 0) return;
    }
  }
}

std::optional<std::chrono::nanoseconds> scheduler::poll_delay() {
  if (table_.inflight_slices() > 0 || table_.has_completions()) return std::chrono::nanoseconds{0};
  const auto item = arb_.peek();
  if (!item) return std::nullopt;
  const slice* s = table_.find_slice(item->id);
  if (!s) return std::chrono::nanoseconds{0};  // stale entry: the next poll drops it
  return (s->is_write ? tx_bucket_ : rx_bucket_).wait_time(now_());
}

}  // namespace dualpath::transport
