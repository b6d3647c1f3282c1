#pragma once
// The locks held around libfabric provider calls where the shm provider's own spin locks would make threads
// spin on each other (transport::fabric_options::provider_lock, docs/design.md §13).
//
// shm guards every endpoint's receive region with a spin lock in shared memory: a post to a peer holds the
// peer's lock (for a large RMA the whole copy long: the poster copies into the peer with process_vm_writev),
// and a completion read holds the reader's own. When the threads that take one region's lock outnumber the
// cores, a holder that is preempted leaves every other taker spinning out its time slice. A sleeping lock
// around exactly those calls removes that. For the nodes emulated in one process it is a lock per region:
// one lock for all would also stop the spinning, but then a long copy into one node stalls every other
// node's posts and completion reads, which separate hosts' NICs never do. For node processes on one host
// (`dualpath run --processes`) it is one host-wide lock for every region: per region there, `dualpath` ran
// 10-30% slower on 2 cores (docs/design.md §13).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dualpath::transport {

class call_lock {
 public:
  // Regions map onto this many locks (call_lock_slot); two regions that share one only wait on each other.
  static constexpr uint32_t slots = 64;

  virtual ~call_lock() = default;
  virtual void lock(uint32_t slot) = 0;
  virtual void unlock(uint32_t slot) = 0;
};

// The lock of the region behind an endpoint address (the same in every process of the host).
uint32_t call_lock_slot(const std::vector<uint8_t>& address);

// Holds one slot of a call_lock (or nothing, for a null lock) until destroyed or unlock() is called.
class held_call {
 public:
  held_call(call_lock* lock, uint32_t slot) : lock_(lock), slot_(slot) {
    if (lock_) lock_->lock(slot_);
  }
  ~held_call() { unlock(); }
  held_call(const held_call&) = delete;
  held_call& operator=(const held_call&) = delete;
  void unlock() {
    if (lock_) lock_->unlock(slot_);
    lock_ = nullptr;
  }

 private:
  call_lock* lock_;
  uint32_t slot_;
};

// For the nodes of one process.
std::shared_ptr<call_lock> make_process_call_lock();

// A host-wide lock, the same for every slot: a robust, process-shared mutex in the POSIX shared memory object
// `name` ("/name"). `create`: make (or reset) the object; otherwise open the one the launcher made. A holder
// that dies (a node process killed mid-call) does not leave it locked: the next taker recovers it. Throws
// user_error naming `name` when it cannot be made or opened.
std::shared_ptr<call_lock> open_host_call_lock(const std::string& name, bool create);
// The same where the lock only buys speed (node processes, docs/design.md §13): where it cannot be made or
// opened (a host without /dev/shm), a warning naming why, and nullptr: the caller runs without it.
std::shared_ptr<call_lock> try_host_call_lock(const std::string& name, bool create);

// Removes the shared memory object; mappings still open stay valid. No error when it is gone already.
void remove_host_call_lock(const std::string& name);

}  // namespace dualpath::transport
