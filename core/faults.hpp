#pragma once
// Fault-injection seams (docs/design.md §16): named points in the code where a real fault cannot be made
// on demand (an EIO from the disk, an error completion from the NIC, a dying GPU), compiled in and off by
// default. A test arms a point; the code at the point asks `fire` and, when it fires, behaves exactly as
// if the real fault had happened there. Off, a seam costs one relaxed atomic load.
//
//   storage_read       a block read completes with EIO            (storage/block_store.cpp)
//   storage_write      a block write fails with ENOSPC            (storage/block_store.cpp)
//   fabric_post        the provider refuses a transfer post       (transport/)
//   fabric_completion  a transfer completes with an error         (transport/)
//   compute_step       the compute backend throws in a layer/step (actors/compute_worker.cpp)
//   node_stop          a node process exits at once               (cluster/node_process.cpp)
//
// Processes started by a test arm points through the environment: DUALPATH_FAULTS="storage_read:3,node_stop"
// (name[:times[:skip]]; times 0 = every hit), read once by arm_from_env().
#include <cstdint>
#include <string>

#include "core/status.hpp"

namespace dualpath::faults {

enum class point : uint8_t { storage_read, storage_write, fabric_post, fabric_completion, compute_step, node_stop };
inline constexpr int point_count = 6;

const char* name(point p);

// The next `times` hits of `p` fire (0: every hit until disarmed), after `skip` hits that do not.
void arm(point p, uint32_t times = 1, uint32_t skip = 0);
void disarm(point p);

// Called at the seam: true when this hit must fail.
bool fire(point p);
// Hits that fired since the process started (tests check the seam was reached).
uint64_t fired(point p);

// Arms points from DUALPATH_FAULTS; bad_input naming a bad entry.
status arm_from_env();

// Arms `p` for the lifetime of the object (tests).
class scoped {
 public:
  explicit scoped(point p, uint32_t times = 1, uint32_t skip = 0) : p_(p) { arm(p, times, skip); }
  ~scoped() { disarm(p_); }
  scoped(const scoped&) = delete;
  scoped& operator=(const scoped&) = delete;

 private:
  point p_;
};

}  // namespace dualpath::faults
