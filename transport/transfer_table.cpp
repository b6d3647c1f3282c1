#include "transport/transfer_table.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace dualpath::transport {

uint64_t transfer_table::open(uint64_t context, traffic_class tc, uint32_t peer, uint64_t bytes, time_point now) {
  const uint64_t id = next_transfer_++;
  transfer t;
  t.context = context;
  t.tc = tc;
  t.peer = peer;
  t.bytes = bytes;
  transfers_.emplace(id, std::move(t));
  if (tc == traffic_class::model) {
    model_pending_++;
    last_model_ = now;
  }
  return id;
}

uint64_t transfer_table::add(slice s) {
  s.id = next_slice_++;
  const uint64_t id = s.id;
  transfers_.at(s.transfer).slices_total++;
  slices_.emplace(id, std::move(s));
  return id;
}

std::vector<uint64_t> transfer_table::add_slices(uint64_t transfer, const transfer_request& r, uint64_t slice_bytes) {
  std::vector<uint64_t> queue;
  const uint64_t count = (r.length + slice_bytes - 1) / slice_bytes;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t off = i * slice_bytes;
    slice s;
    s.transfer = transfer;
    s.tc = r.tc;
    s.peer = r.peer;
    s.is_write = r.is_write;
    s.local = r.local + off;
    s.desc = r.desc;
    s.remote_addr = r.remote_addr + off;
    s.key = r.key;
    s.length = std::min(slice_bytes, r.length - off);
    s.pieces = r.pieces;  // a gathered write: one slice (endpoint::write_gather keeps it within one)
    const bool last = i + 1 == count;
    if (last && r.remote_data) {
      s.carries_data = true;
      s.data = *r.remote_data;
    }
    const uint64_t id = add(s);
    if (last && r.remote_data && count > 1) {
      transfers_.at(transfer).held = id;
    } else {
      queue.push_back(id);
    }
  }
  return queue;
}

transfer_table::split_result transfer_table::split(uint64_t id, uint64_t head_bytes) {
  slice& head = slices_.at(id);
  slice rest = head;
  rest.local += head_bytes;
  rest.remote_addr += head_bytes;
  rest.length -= head_bytes;
  rest.first_attempt.reset();
  // The notification rides on the last byte, so it moves to the rest.
  head.length = head_bytes;
  head.carries_data = false;
  const bool held = rest.carries_data;
  const uint64_t transfer = head.transfer;
  const uint64_t rest_id = add(rest);
  if (held) transfers_.at(transfer).held = rest_id;
  return {rest_id, held};
}

slice* transfer_table::find_slice(uint64_t id) {
  auto it = slices_.find(id);
  return it == slices_.end() ? nullptr : &it->second;
}

void transfer_table::drop(uint64_t id) {
  auto it = slices_.find(id);
  if (it == slices_.end() || it->second.posted) return;  // a posted slice leaves through complete()/fail()
  slices_.erase(it);
}

void transfer_table::account(const slice& s, bool posting) {
  auto& n = inflight_[index(s.tc)];
  if (posting) {
    n.slices++;
    n.bytes += s.length;
    posted_.insert(s.id);
  } else {
    n.slices--;
    n.bytes -= s.length;
    posted_.erase(s.id);
  }
}

void transfer_table::mark_posted(uint64_t id, time_point now) {
  slice& s = slices_.at(id);
  s.posted = true;
  s.posted_at = now;
  transfers_.at(s.transfer).posted.push_back(id);
  account(s, true);
}

std::optional<uint64_t> transfer_table::complete(uint64_t id, time_point now) {
  auto sit = slices_.find(id);
  if (sit == slices_.end() || !sit->second.posted) return std::nullopt;
  const slice s = sit->second;
  account(s, false);
  slices_.erase(sit);
  auto tit = transfers_.find(s.transfer);
  if (tit == transfers_.end()) return std::nullopt;
  auto& t = tit->second;
  t.posted.erase(std::find(t.posted.begin(), t.posted.end(), id));
  auto& c = stats_[index(t.tc)];
  c.slices++;
  c.bytes += s.length;
  t.slices_done++;
  std::optional<uint64_t> release;
  if (t.held && t.slices_done + 1 == t.slices_total) {
    release = t.held;
    t.held = 0;
  }
  if (t.slices_done == t.slices_total) finish(s.transfer, true, {}, now);
  return release;
}

void transfer_table::log_failure(const transfer& t, const std::string& why, time_point now) {
  auto& l = failure_logs_[t.peer];
  if (l.why == why && now - l.logged < std::chrono::seconds(1)) {
    ++l.unlogged;
    return;
  }
  const std::string more = l.unlogged ? fmt::format(" ({} more to this peer not shown)", l.unlogged) : std::string();
  spdlog::warn("transport: {} transfer (context {}, {} bytes, peer {}) failed: {}{}", to_string(t.tc), t.context,
               t.bytes, t.peer, why, more);
  l = {why, now, 0};
}

void transfer_table::fail(uint64_t id, const std::string& why, time_point now) {
  auto it = transfers_.find(id);
  if (it == transfers_.end()) return;
  const auto& t = it->second;
  log_failure(t, why, now);
  if (t.held) slices_.erase(t.held);
  for (uint64_t sid : t.posted) {
    auto sit = slices_.find(sid);
    account(sit->second, false);
    slices_.erase(sit);
  }
  finish(id, false, why, now);
}

void transfer_table::finish(uint64_t id, bool ok, const std::string& why, time_point now) {
  auto it = transfers_.find(id);
  const transfer& t = it->second;
  auto& c = stats_[index(t.tc)];
  c.transfers++;
  if (!ok) c.errors++;
  if (t.tc == traffic_class::model) {
    model_ready_++;
    model_pending_--;
    last_model_ = now;
  }
  done_.push_back(completion{t.context, ok, why});
  transfers_.erase(it);
}

std::vector<transfer_table::overdue> transfer_table::expired(time_point now, std::chrono::nanoseconds timeout) const {
  std::vector<overdue> out;
  for (uint64_t id : posted_) {
    const slice& s = slices_.at(id);
    if (now - s.posted_at <= timeout) continue;
    // One entry per transfer: the caller fails each once.
    if (std::none_of(out.begin(), out.end(), [&](const overdue& o) { return o.transfer == s.transfer; })) {
      out.push_back({s.transfer, s.peer});
    }
  }
  return out;
}

std::vector<completion> transfer_table::take_completions() {
  std::vector<completion> out;
  out.swap(done_);
  model_ready_ = 0;
  return out;
}

}  // namespace dualpath::transport
