#pragma once
// What the scheduler needs from a provider, and nothing more: the kv guard, the class windows and the
// rate caps are decided above this line, so they can be tested with a fake provider and no libfabric.
#include <cstdint>
#include <string>

#include "core/status.hpp"
#include "transport/transfer_table.hpp"

namespace dualpath::transport {

struct post_result {
  enum status_t : uint8_t {
    accepted,   // the provider owns the slice until it completes
    try_again,  // the provider's queue is full: keep the slice's turn and post it after some progress
    refused,    // the provider rejected it: its transfer fails with `error`
  };
  status_t status = accepted;
  std::string error;
};

class poster {
 public:
  virtual ~poster() = default;
  // Posts an RMA write (with remote data when the slice carries it) or read of `s`.
  virtual post_result post(const slice& s) = 0;
  // Ok when `peer` can be reached now; otherwise (unavailable) why not.
  virtual status reachable(uint32_t peer) = 0;
  // Reaps completions, so a model transfer that finished during a run of posts is seen at once.
  virtual void progress() = 0;
};

}  // namespace dualpath::transport
