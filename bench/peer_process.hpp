#pragma once
// The far end of `dualpath bench transport --peer-process`: an endpoint in a child process with its buffer in a
// memfd (transport::host_memory::shared_file), as a node process's buffers are, so that a benchmark writes across
// a process boundary the way node processes on one host do.
#include <sys/types.h>

#include <cstdint>

#include "transport/endpoint.hpp"

namespace dualpath::bench {

class peer_process {
 public:
  // Forks a child that opens an endpoint of `opts`, registers a shared buffer of `bytes` and makes progress on it
  // until this object is destroyed (or 10 minutes pass). Call before this process opens any endpoint. Throws
  // user_error when the child cannot be started or does not answer.
  peer_process(const transport::fabric_options& opts, uint64_t bytes);
  ~peer_process();
  peer_process(const peer_process&) = delete;
  peer_process& operator=(const peer_process&) = delete;

  const transport::address_bytes& address() const { return address_; }
  const transport::remote_region& remote() const { return remote_; }

 private:
  void stop();

  pid_t pid_ = -1;
  int to_child_ = -1;
  transport::address_bytes address_;
  transport::remote_region remote_;
};

}  // namespace dualpath::bench
