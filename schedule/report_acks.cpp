// docs/design.md §7.1: acknowledgements accumulate between two reports of a leader.
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

}  // namespace dualpath::schedule
