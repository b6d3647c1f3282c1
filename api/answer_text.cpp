#include "api/answer_text.hpp"

#include <algorithm>

#include "api/chat_response.hpp"

namespace dualpath::api {

answer_text::answer_text(decode_fn decode, special_fn special, std::vector<std::string> stops, bool end_at_special)
    : decode_(std::move(decode)),
      special_(std::move(special)),
      stops_(std::move(stops)),
      end_at_special_(end_at_special) {
  stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
  for (const auto& s : stops_) longest_stop_ = std::max(longest_stop_, s.size());
}

std::string answer_text::push(const std::vector<int32_t>& ids) {
  for (const int32_t id : ids) {
    if (ended_) break;
    ++tokens_;
    if (special_(id)) {
      if (!end_at_special_) continue;
      ended_ = true;
      break;
    }
    held_ += utf8_.push(decode_({id}));
  }
  return release(ended_);
}

std::string answer_text::finish() {
  if (!ended_) held_ += utf8_.finish();
  return release(true);
}

std::string answer_text::release(bool all) {
  // A stop string lies wholly in held_: text_ is only given bytes no stop string can begin in (see below).
  if (auto [before, stopped] = cut_at_stop(held_, stops_); stopped) {
    text_ += before;
    held_.clear();
    ended_ = by_stop_ = true;
    return before;
  }
  // The last longest_stop_ - 1 bytes may begin a stop string the next token completes: held back.
  size_t keep = all ? 0 : std::min(held_.size(), longest_stop_ > 0 ? longest_stop_ - 1 : 0);
  size_t cut = held_.size() - keep;
  while (cut > 0 && cut < held_.size() && (uint8_t(held_[cut]) & 0xC0) == 0x80) --cut;  // whole characters
  std::string out = held_.substr(0, cut);
  held_.erase(0, cut);
  text_ += out;
  return out;
}

}  // namespace dualpath::api
