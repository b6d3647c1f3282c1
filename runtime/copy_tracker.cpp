#include "runtime/copy_tracker.hpp"

namespace dualpath::runtime {

uint64_t copy_tracker::add_batch(size_t transfers, done_fn done) {
  const uint64_t id = next_batch_++;
  batches_[id] = {transfers, status{}, std::move(done)};
  return id;
}

uint64_t copy_tracker::context_for(uint64_t batch) {
  const uint64_t c = next_context_++;
  contexts_[c] = batch;
  return c;
}

std::optional<std::pair<copy_tracker::done_fn, status>> copy_tracker::complete(uint64_t context, bool ok,
                                                                               const std::string& error) {
  auto c = contexts_.find(context);
  if (c == contexts_.end()) {
    ++stray_;
    return std::nullopt;
  }
  auto b = batches_.find(c->second);
  contexts_.erase(c);
  if (b == batches_.end()) {
    ++stray_;
    return std::nullopt;
  }
  if (!ok && b->second.error.ok()) b->second.error = status(errc::transfer, error);
  if (--b->second.outstanding > 0) return std::nullopt;
  auto out = std::make_pair(std::move(b->second.done), std::move(b->second.error));
  batches_.erase(b);
  return out;
}

}  // namespace dualpath::runtime
