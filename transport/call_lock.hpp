#pragma once
// The lock held around each libfabric provider call where the shm provider's own spin locks would make
// threads spin on each other (transport::fabric_options::provider_lock, docs/design.md §13).
//
// shm guards every peer's receive region with a spin lock in shared memory. When the threads that post to
// one peer outnumber the cores, a holder that is preempted leaves every other poster spinning out its time
// slice. A sleeping lock around the provider calls removes that: one in-process mutex for the nodes emulated
// in one process, and a host-wide one for node processes on one host (`dualpath run --processes`).
#include <memory>
#include <string>

namespace dualpath::transport {

class call_lock {
 public:
  virtual ~call_lock() = default;
  virtual void lock() = 0;
  virtual void unlock() = 0;
};

// For the nodes of one process.
std::shared_ptr<call_lock> make_process_call_lock();

// A host-wide lock: a robust, process-shared mutex in the POSIX shared memory object `name` ("/name").
// `create`: make (or reset) the object; otherwise open the one the launcher made. A holder that dies (a node
// process killed mid-call) does not leave it locked: the next taker recovers it. Throws user_error naming
// `name` when it cannot be made or opened.
std::shared_ptr<call_lock> open_host_call_lock(const std::string& name, bool create);
// The same where the lock only buys speed (node processes, docs/design.md §13): where it cannot be made or
// opened (a host without /dev/shm), a warning naming why, and nullptr: the caller runs without it.
std::shared_ptr<call_lock> try_host_call_lock(const std::string& name, bool create);

// Removes the shared memory object; mappings still open stay valid. No error when it is gone already.
void remove_host_call_lock(const std::string& name);

}  // namespace dualpath::transport
