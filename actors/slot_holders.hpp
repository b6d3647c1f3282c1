#pragma once
// Buffer slots a remote engine holds on this node (docs/design.md §13): a prefill engine reserves slots in its
// decode node's buffer (DE-read loads and forward targets) and gives them back itself, or hands them to a
// decode engine with its hand-off. If its process dies first, nobody would: told that the node is lost, the
// traffic queue takes back what that node's engines held. A decode engine adopts a hand-off's slots before it
// uses them, and an adoption fails where they went back already (they may be someone else's by now).
// `Holder` is the holding actor's address; the class is plain so it is tested without actors.
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace dualpath::actors {

template <class Holder>
class slot_holders {
 public:
  // `holder` now holds `slots`.
  void hold(const std::vector<uint32_t>& slots, const Holder& holder) {
    for (auto s : slots) held_[s] = holder;
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
  // The holders for which `lost(holder)` is true are gone: the slots they still held, to go back to the buffer.
  template <class Lost>
  std::vector<uint32_t> reclaim_if(Lost lost) {
    std::vector<uint32_t> out;
    for (auto it = held_.begin(); it != held_.end();)
      if (lost(it->second)) {
        out.push_back(it->first);
        it = held_.erase(it);
      } else ++it;
    return out;
  }
  size_t held() const { return held_.size(); }

 private:
  std::unordered_map<uint32_t, Holder> held_;
};

}  // namespace dualpath::actors
