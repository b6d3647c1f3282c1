#pragma once
// Buffer slots a remote engine holds on this node (docs/design.md §13): a prefill engine reserves slots in its
// decode node's buffer (DE-read loads and forward targets) and gives them back itself, or hands them to a
// decode engine with its hand-off. If its process dies first, nobody would: the traffic queue watches the
// holder and takes them back when it goes down. A decode engine adopts a hand-off's slots before it uses
// them, and an adoption fails where the holder is already gone (the slots may be someone else's by now).
// `Holder` is the holding actor's address; the class is plain so it is tested without actors.
#include <cstdint>
#include <set>
#include <unordered_map>
#include <vector>

namespace dualpath::actors {

template <class Holder>
class slot_holders {
 public:
  // `holder` now holds `slots`; true the first time it holds any here (watch it from then on, once).
  bool hold(const std::vector<uint32_t>& slots, const Holder& holder) {
    for (auto s : slots) held_[s] = holder;
    return watched_.insert(holder).second;
  }
  // Slots given back to the buffer, by whoever held them.
  void release(const std::vector<uint32_t>& slots) {
    for (auto s : slots) held_.erase(s);
  }
  // A local engine takes `slots` from `holder`: true when `holder` still holds every one of them (they then
  // leave the watch), false when any went back with a holder that went down.
  bool adopt(const std::vector<uint32_t>& slots, const Holder& holder) {
    for (auto s : slots) {
      const auto it = held_.find(s);
      if (it == held_.end() || it->second != holder) return false;
    }
    for (auto s : slots) held_.erase(s);
    return true;
  }
  // `holder` went down: the slots it still held, to go back to the buffer.
  std::vector<uint32_t> reclaim(const Holder& holder) {
    std::vector<uint32_t> out;
    watched_.erase(holder);
    for (auto it = held_.begin(); it != held_.end();)
      if (it->second == holder) {
        out.push_back(it->first);
        it = held_.erase(it);
      } else ++it;
    return out;
  }
  size_t held() const { return held_.size(); }

 private:
  std::unordered_map<uint32_t, Holder> held_;
  std::set<Holder> watched_;  // every remote holder seen and not yet down
};

}  // namespace dualpath::actors
