#include "transport/arbiter.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/status.hpp"

namespace dualpath::transport {

const char* to_string(traffic_class tc) { return tc == traffic_class::model ? "model" : "kv"; }

void fair_lane::settle() {
  while (!ring_.empty()) {
    flow& f = flows_.at(ring_.front());
    if (!f.credited) {
      f.deficit += quantum_;
      f.credited = true;
    }
    if (f.items.front().bytes <= f.deficit) return;
    f.credited = false;
    ring_.push_back(ring_.front());
    ring_.pop_front();
  }
}

void fair_lane::push(const arbiter_item& item) {
  auto [it, fresh] = flows_.try_emplace(item.flow);
  it->second.items.push_back(item);
  ++size_;
  if (!fresh) return;
  ring_.push_back(item.flow);
  if (ring_.size() == 1) settle();
}

void fair_lane::push_front(const arbiter_item& item) {
  auto [it, fresh] = flows_.try_emplace(item.flow);
  flow& f = it->second;
  f.items.push_front(item);
  ++size_;
  if (!fresh) {
    for (auto r = ring_.begin(); r != ring_.end(); ++r)
      if (*r == item.flow) {
        ring_.erase(r);
        break;
      }
  }
  if (!ring_.empty()) flows_.at(ring_.front()).credited = false;  // its turn resumes after this one
  ring_.push_front(item.flow);
  f.deficit = std::max(f.deficit, item.bytes);  // it keeps the turn it had
  f.credited = true;
}

void fair_lane::insert_after_front(const arbiter_item& item) {
  auto& items = flows_.at(ring_.front()).items;
  items.insert(items.begin() + 1, item);
  ++size_;
}

void fair_lane::pop_front() {
  const uint32_t id = ring_.front();
  flow& f = flows_.at(id);
  f.deficit -= std::min(f.deficit, f.items.front().bytes);
  f.items.pop_front();
  --size_;
  if (f.items.empty()) {
    flows_.erase(id);
    ring_.pop_front();
  }
  settle();
}

arbiter::arbiter(bool isolation, double kv_share, uint64_t kv_quantum) : isolation_(isolation), kv_(kv_quantum) {
  if (!(kv_share >= 0 && kv_share < 1)) {
    throw user_error(fmt::format("transport: kv_share {} is out of range; it must be in [0, 1)", kv_share));
  }
  kv_weight_ = kv_share / (1 - kv_share);
}

void arbiter::push(const arbiter_item& item) {
  if (!isolation_) fifo_.push_back(item);
  else if (item.tc == traffic_class::model) model_.push_back(item);
  else kv_.push(item);
}

void arbiter::push_front(const arbiter_item& item) {
  if (!isolation_) fifo_.push_front(item);
  else if (item.tc == traffic_class::model) model_.push_front(item);
  else kv_.push_front(item);
}

void arbiter::split_kv_front(uint64_t head_bytes, const std::optional<arbiter_item>& rest) {
  if (kv_.empty()) return;
  kv_.front().bytes = head_bytes;
  if (rest) kv_.insert_after_front(*rest);
}

bool arbiter::kv_turn() const {
  if (kv_.empty()) return false;
  if (model_.empty()) return true;
  return kv_credit_ >= static_cast<double>(kv_.front().bytes);
}

std::optional<arbiter_item> arbiter::peek() const {
  if (!isolation_) {
    if (fifo_.empty()) return std::nullopt;
    return fifo_.front();
  }
  if (kv_turn()) return kv_.front();
  if (!model_.empty()) return model_.front();
  return std::nullopt;
}

void arbiter::pop() {
  if (!isolation_) {
    if (!fifo_.empty()) fifo_.pop_front();
    return;
  }
  if (kv_turn()) {
    // Credit is only spent while model traffic competes; alone, kv runs free and banks nothing.
    if (!model_.empty()) kv_credit_ -= static_cast<double>(kv_.front().bytes);
    kv_.pop_front();
    if (model_.empty()) kv_credit_ = 0;
    return;
  }
  if (model_.empty()) return;
  if (!kv_.empty()) kv_credit_ += kv_weight_ * static_cast<double>(model_.front().bytes);
  model_.pop_front();
}

}  // namespace dualpath::transport
