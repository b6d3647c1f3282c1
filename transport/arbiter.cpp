#include "transport/arbiter.hpp"

#include <fmt/format.h>

#include "core/status.hpp"

namespace dualpath::transport {

const char* to_string(traffic_class tc) { return tc == traffic_class::model ? "model" : "kv"; }

arbiter::arbiter(bool isolation, double kv_share) : isolation_(isolation) {
  if (!(kv_share >= 0 && kv_share < 1)) {
    throw user_error(fmt::format("transport: kv_share {} is out of range; it must be in [0, 1)", kv_share));
  }
  kv_weight_ = kv_share / (1 - kv_share);
}

void arbiter::push(const arbiter_item& item) {
  if (!isolation_) {
    fifo_.push_back(item);
  } else {
    (item.tc == traffic_class::model ? model_ : kv_).push_back(item);
  }
}

void arbiter::push_front(const arbiter_item& item) {
  if (!isolation_) {
    fifo_.push_front(item);
  } else {
    (item.tc == traffic_class::model ? model_ : kv_).push_front(item);
  }
}

void arbiter::split_kv_front(uint64_t head_bytes, const std::optional<arbiter_item>& rest) {
  if (kv_.empty()) return;
  kv_.front().bytes = head_bytes;
  if (rest) kv_.insert(kv_.begin() + 1, *rest);
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
