#include "actors/request_watch.hpp"

#include <algorithm>

namespace dualpath::actors {

bool deadline_book::add(caf::message_id answer, time_point deadline) {
  pending_[answer] = deadline;
  if (armed_ && *armed_ <= deadline) return false;
  armed_ = deadline;
  return true;
}

std::vector<caf::message_id> deadline_book::take_expired(time_point now, std::optional<time_point>& next_check) {
  if (armed_ && *armed_ <= now) armed_.reset();  // this check, or one armed earlier that it stands for
  std::vector<caf::message_id> out;
  std::optional<time_point> earliest;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second <= now) {
      out.push_back(it->first);
      it = pending_.erase(it);
      continue;
    }
    earliest = earliest ? std::min(*earliest, it->second) : it->second;
    ++it;
  }
  next_check.reset();
  if (earliest && !(armed_ && *armed_ <= *earliest)) next_check = armed_ = earliest;
  return out;
}

}  // namespace dualpath::actors
