#pragma once
// Receiving side of an endpoint: reaps the completion queue, turns error completions and silent slices
// into failed transfers, and collects the remote completion data that arrived here. A completion names
// its slice through the provider context; the transfer table finds the rest.
#include <cstdint>
#include <string>
#include <vector>

#include "transport/endpoint.hpp"

namespace dualpath::transport {

class fabric_port;
class scheduler;
class transfer_table;

class completion_loop {
 public:
  completion_loop(const fabric_options& opts, fabric_port& port, transfer_table& table, scheduler& sched);
  ~completion_loop();
  completion_loop(const completion_loop&) = delete;
  completion_loop& operator=(const completion_loop&) = delete;

  // Reaps the slices copied without the provider, then reads the completion queue until it is empty (with
  // `provider` false only when nothing is posted to the provider). Never blocks.
  void drain(bool provider = true);
  // Fails the transfers of slices posted longer than the timeout ago: a peer that vanished without a
  // word (a crashed process on shm) produces no completion at all.
  void check_timeouts();

  std::vector<arrival> take_arrivals();
  uint64_t arrivals() const { return arrivals_; }

 private:
  // A slice that completed without error: its transfer goes on (or a fault injected here fails it).
  void finished(uint64_t slice_id);
  void on_error(uint64_t slice_id, int err, const std::string& why);

  const fabric_options& opts_;
  fabric_port& port_;
  transfer_table& table_;
  scheduler& sched_;
  std::vector<arrival> arrived_;
  uint64_t arrivals_ = 0;
  uint64_t orphan_errors_ = 0;  // error completions without a context (a dead peer can raise one per poll)
};

}  // namespace dualpath::transport
