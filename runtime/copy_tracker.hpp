#pragma once
// Copy batches in flight on a node's CNICs: each transfer of a batch carries a fresh context; a batch is
// done when its last transfer completed, with the first error if any failed. Lookup by hash. A completion
// for an unknown context is counted and dropped. Not thread-safe: the node's progress thread owns it.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/status.hpp"

namespace dualpath::runtime {

class copy_tracker {
 public:
  using done_fn = std::function<void(status)>;

  // A batch of `transfers` transfers; answers its id.
  uint64_t add_batch(size_t transfers, done_fn done);
  // A context for one transfer of `batch`.
  uint64_t context_for(uint64_t batch);
  // A transfer finished: when it was its batch's last, the batch's callback and status.
  std::optional<std::pair<done_fn, status>> complete(uint64_t context, bool ok, const std::string& error);

  bool empty() const { return contexts_.empty(); }
  uint64_t stray() const { return stray_; }

 private:
  struct batch {
    size_t outstanding = 0;
    status error;
    done_fn done;
  };
  std::unordered_map<uint64_t, batch> batches_;
  std::unordered_map<uint64_t, uint64_t> contexts_;  // context -> batch
  uint64_t next_batch_ = 1, next_context_ = 1;
  uint64_t stray_ = 0;
};

}  // namespace dualpath::runtime
