#include "runtime/load_tracker.hpp"

#include <string>

namespace dualpath::runtime {

result<std::vector<storage::read_request>> load_tracker::add(const std::vector<block_key>& keys,
                                                             const std::vector<std::byte*>& buffers,
                                                             load_result partial, done_fn done,
                                                             clock::time_point deadline) {
  if (keys.size() >= max_blocks)
    return status(errc::capacity, "a load of " + std::to_string(keys.size()) + " blocks exceeds the limit of " +
                                      std::to_string(max_blocks - 1));
  const uint64_t id = next_++;
  pending& p = loads_[id];
  p.result = std::move(partial);
  p.state.assign(keys.size(), 0);
  p.reasons.assign(keys.size(), status{});
  p.outstanding = keys.size();
  p.done = std::move(done);
  p.deadline = deadline;
  std::vector<storage::read_request> reads;
  for (size_t i = 0; i < keys.size(); ++i) reads.push_back({keys[i], buffers.at(i), pack(id, i)});
  return reads;
}

std::optional<std::pair<load_tracker::done_fn, load_result>> load_tracker::complete(const storage::read_completion& c) {
  const uint64_t id = c.user_data >> index_bits;
  const size_t index = c.user_data & (max_blocks - 1);
  auto it = loads_.find(id);
  if (it == loads_.end() || index >= it->second.state.size() || it->second.state[index] != 0) {
    ++stray_;
    return std::nullopt;
  }
  pending& p = it->second;
  p.state[index] = c.ok() ? 1 : -1;
  if (!c.ok()) p.reasons[index] = read_status(c);
  p.result.bytes += c.bytes_read;
  if (--p.outstanding > 0) return std::nullopt;
  // A miss from the first bad block on: a later block cannot be used without the ones before it.
  uint32_t valid = 0;
  while (valid < p.state.size() && p.state[valid] == 1) ++valid;
  p.result.valid = valid;
  if (valid < p.state.size()) p.result.status = p.reasons[valid];
  auto out = std::make_pair(std::move(p.done), std::move(p.result));
  loads_.erase(it);
  return out;
}

std::vector<std::pair<load_tracker::done_fn, load_result>> load_tracker::expire(clock::time_point now) {
  std::vector<std::pair<done_fn, load_result>> out;
  for (auto& [id, p] : loads_) {
    if (!p.done || now <= p.deadline) continue;
    load_result r;
    r.status = status(errc::timeout, "storage reads did not finish in time (" + std::to_string(p.outstanding) + " of " +
                                         std::to_string(p.state.size()) + " blocks outstanding)");
    out.emplace_back(std::move(p.done), std::move(r));
    p.done = nullptr;
  }
  return out;
}

// A miss or another model's block is simply not there for us; a bad checksum or a short file is corrupt;
// the OS refusing the read is an I/O error.
status read_status(const storage::read_completion& c) {
  using storage::read_outcome;
  switch (c.outcome) {
    case read_outcome::ok: return {};
    case read_outcome::miss:
    case read_outcome::foreign: return status(errc::not_found, c.message);
    case read_outcome::corrupt:
    case read_outcome::truncated: return status(errc::corrupt, c.message);
    case read_outcome::io_error: return status(errc::io, c.message);
    case read_outcome::bad_request: return status(errc::internal, c.message);
  }
  return status(errc::internal, c.message);
}

}  // namespace dualpath::runtime
