// docs/design.md §7.1: acknowledgements accumulate between two reports of a leader, and a report that says
// nothing new is left out.
#include "schedule/report_acks.hpp"

#include <algorithm>

namespace dualpath::schedule {

void report_acks::on_engine(size_t index, std::vector<uint64_t> ids) {
  if (index >= latest_.size()) return;
  auto& seen = seen_[index];
  seen.insert(seen.end(), ids.begin(), ids.end());
  latest_[index] = std::move(ids);
}

std::vector<std::vector<uint64_t>> report_acks::take() {
  std::vector<std::vector<uint64_t>> out(seen_.size());
  for (size_t i = 0; i < seen_.size(); ++i) {
    auto& ids = seen_[i];
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    out[i] = std::move(ids);
    seen_[i] = latest_[i];
  }
  return out;
}

namespace {

bool acknowledges(const group_report& r) {
  return !r.read_acked.empty() ||
         std::any_of(r.acked.begin(), r.acked.end(), [](const auto& ids) { return !ids.empty(); });
}

}  // namespace

bool report_gate::send(const group_report& r) {
  const bool repeat = last_ && !acknowledges(r) && r.node == *last_;
  if (repeat && ++repeats_ < every_) return false;
  repeats_ = 0;
  last_ = r.node;
  return true;
}

}  // namespace dualpath::schedule
