#include "runtime/ep_rounds.hpp"

#include <algorithm>

namespace dualpath::runtime {

ep_rounds::ep_rounds(uint32_t group_size, uint32_t layers) : group_size_(std::max(1u, group_size)), layers_(layers) {}

ep_actions ep_rounds::join(uint32_t engine, double layer_s, int64_t now_ns) {
  ep_actions a;
  if (in_round(engine) || waiting(engine)) return a;  // one pass at a time per engine: a repeat is ignored
  queue_[engine] = layer_s;
  pending_.erase(engine);
  if (!running_) a = start_next(now_ns, std::move(a));
  return a;
}

ep_actions ep_rounds::arrive(uint32_t engine, uint32_t layer, double attention_s, int64_t now_ns) {
  ep_actions a;
  auto it = members_.find(engine);
  if (!running_ || it == members_.end() || layer != layer_ || it->second.arrived) {
    a.dropped.push_back(engine);  // not (or no longer) waited for: its wait fails rather than hangs
    return a;
  }
  it->second.arrived = true;
  it->second.attention_s += attention_s;
  return try_release(now_ns, std::move(a));
}

ep_actions ep_rounds::idle(uint32_t engine, int64_t now_ns) {
  ep_actions a;
  if (pending_.erase(engine) && !running_) a = start_next(now_ns, std::move(a));
  return a;
}

ep_actions ep_rounds::leave(uint32_t engine, int64_t now_ns) {
  ep_actions a;
  if (pending_.erase(engine) && !running_) a = start_next(now_ns, std::move(a));
  if (queue_.erase(engine)) return a;
  auto it = members_.find(engine);
  if (it == members_.end()) return a;
  done_s_[engine] = it->second.attention_s;
  members_.erase(it);
  return try_release(now_ns, std::move(a));
}

ep_actions ep_rounds::expire(uint64_t round, uint32_t layer, int64_t now_ns) {
  ep_actions a;
  if (!running_ && round == round_ && layer == layers_ && !pending_.empty()) {
    pending_.clear();  // the gather's deadline: start with whoever joined
    return start_next(now_ns, std::move(a));
  }
  if (!running_ || round != round_ || layer != layer_) return a;  // that layer already ended
  for (auto it = members_.begin(); it != members_.end();) {
    if (it->second.arrived) {
      ++it;
      continue;
    }
    a.dropped.push_back(it->first);
    done_s_[it->first] = it->second.attention_s;
    ++dropped_total_;
    it = members_.erase(it);
  }
  return try_release(now_ns, std::move(a));
}

// Every member left reported the current layer (or none is left): the layer ends for all of them.
ep_actions ep_rounds::try_release(int64_t now_ns, ep_actions a) {
  if (!running_) return a;
  for (const auto& [e, m] : members_)
    if (!m.arrived) return a;
  for (auto& [e, m] : members_) {
    a.released.push_back(e);
    m.arrived = false;
  }
  if (members_.empty() || ++layer_ == layers_) {
    end_round();
    a.gathering = !pending_.empty();
    return start_next(now_ns, std::move(a));
  }
  a.layer_opened = true;
  return a;
}

void ep_rounds::end_round() {
  ep_round_record r;
  r.start_ns = round_start_ns_;
  double sum = 0;
  for (const auto& [e, m] : members_) {
    r.max_s = std::max(r.max_s, m.attention_s);
    sum += m.attention_s;
  }
  for (const auto& [e, s] : done_s_) {
    r.max_s = std::max(r.max_s, s);
    sum += s;
  }
  r.members = uint32_t(members_.size() + done_s_.size());
  r.mean_s = sum / group_size_;
  // A round all of whose members left before any layer ended measured nothing.
  if (layer_ == layers_) records_.push_back(r);
  for (const auto& [e, m] : members_) pending_.insert(e);
  members_.clear();
  done_s_.clear();
  running_ = false;
}

ep_actions ep_rounds::start_next(int64_t now_ns, ep_actions a) {
  if (!pending_.empty() || queue_.empty()) return a;
  running_ = true;
  ++round_;
  layer_ = 0;
  round_start_ns_ = now_ns;
  max_layer_s_ = 0;
  for (const auto& [e, s] : queue_) {
    members_[e] = {};
    max_layer_s_ = std::max(max_layer_s_, s);
    a.admitted.push_back(e);
  }
  queue_.clear();
  a.round_started = true;
  return a;
}

}  // namespace dualpath::runtime
