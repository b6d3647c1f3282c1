#pragma once
// Private to transport/: the libfabric objects behind endpoint and memory_region. Nothing outside this
// folder may include it (libfabric types stay inside the transport component).
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/endpoint.hpp"
#include "transport/poster.hpp"

namespace dualpath::transport {

// "fi_xxx failed: <libfabric message>" for a negative libfabric return code.
std::string fabric_error(const char* what, ssize_t rc);

// True for libfabric errors that mean the peer is gone, not that one operation went wrong.
bool is_connection_error(int err);

// Fabric and domain, shared by an endpoint and its memory regions so that a region closed after its
// endpoint still finds an open domain (closing a domain with live MRs fails).
struct fabric_core {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  ~fabric_core();
};

struct memory_region::impl {
  std::shared_ptr<fabric_core> core;
  uint64_t owner = 0;  // serial of the endpoint that registered it
  fid_mr* mr = nullptr;
  void* desc = nullptr;
  std::byte* base = nullptr;
  uint64_t length = 0;
  remote_region remote;
  address_bytes owner_address;  // non-empty: known to local_copy under it and remote.key
  ~impl();
};

struct peer_state {
  address_bytes address;
  fi_addr_t fi_addr = FI_ADDR_UNSPEC;
  std::string dead_reason;                         // non-empty: transfers to it fail at once
  std::shared_ptr<std::atomic<bool>> local_alive;  // set when the peer is an endpoint of this process
  uint32_t lock_slot = 0;                          // its region's call lock (call_lock_slot)
  int foreign_pid = 0;                             // local_copy: its process, where copies may map it; else 0
};

// The fabric objects of one endpoint: opened once, then used to register memory, reach peers and post
// slices. Posting is the `poster` the scheduler sees; reaping the completion queue is completion_loop's.
class fabric_port {
 public:
  // Throws user_error naming the provider when it is not available or fails to start.
  explicit fabric_port(const fabric_options& opts);
  ~fabric_port();
  fabric_port(const fabric_port&) = delete;
  fabric_port& operator=(const fabric_port&) = delete;

  uint64_t serial() const { return serial_; }
  const fi_info& info() const { return *core_->info; }
  const char* provider_name() const { return core_->info->fabric_attr->prov_name; }
  // tcp and sockets carry every slice to a peer in one byte stream (see fabric_options::kv_guard_bytes).
  bool stream_provider() const;
  // Held around each provider call (fabric_options::provider_lock): a post takes its peer's region's lock,
  // a completion read this endpoint's own. Holds nothing where there is no lock.
  held_call hold_own_region() const { return held_call(call_lock_, own_slot_); }
  size_t cq_data_size() const { return cq_data_size_; }
  fid_cq* cq() const { return cq_; }

  address_bytes address() const;
  uint32_t connect(const address_bytes& peer);
  std::unique_ptr<memory_region> register_memory(void* base, uint64_t length);

  uint32_t peer_count() const { return static_cast<uint32_t>(peers_.size()); }
  // Why transfers to `peer` must fail at once; empty when it looks alive.
  status reachable(uint32_t peer);
  void mark_down(uint32_t peer, const std::string& why);

  post_result post(const slice& s);
  // Hands each slice copied inside post() (local_copy) to `f`, then forgets them: complete, reaped like the
  // provider's completions. `f` must not post.
  template <class F>
  void reap_copied(F&& f) {
    for (size_t i = 0; i < copied_.size(); ++i) f(copied_[i]);
    copied_.clear();  // keeps its capacity: no allocation a slice
  }
  // Operations the provider holds now (posted, not yet reaped).
  size_t posted() const { return contexts_.size(); }
  uint64_t local_copies() const { return local_copies_done_; }
  // Frees the context a completion handed back and returns the slice id it was posted for.
  uint64_t release(void* context);

 private:
  // The provider's per-operation scratch space comes first, so a completion's op_context is its address.
  struct op_context {
    fi_context2 ctx{};
    uint64_t slice = 0;
  };

  void open();
  void close();

  fabric_options opts_;
  call_lock* call_lock_ = nullptr;
  uint32_t own_slot_ = 0;
  uint64_t serial_;
  std::shared_ptr<fabric_core> core_ = std::make_shared<fabric_core>();
  fid_ep* ep_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  uint64_t mr_mode_ = 0;
  size_t cq_data_size_ = 0;
  uint64_t next_key_ = 1;
  std::shared_ptr<std::atomic<bool>> alive_ = std::make_shared<std::atomic<bool>>(true);
  bool local_copies_ = false;    // shm with fabric_options::local_copies: copies by local_copy where it can
  bool foreign_copies_ = false;  // ... also to peer processes (remote addresses are virtual addresses)
  std::vector<uint64_t> copied_;
  uint64_t local_copies_done_ = 0;
  std::vector<peer_state> peers_;
  std::map<address_bytes, uint32_t> peer_index_;
  // Node-based: a context keeps its address while the provider holds it, whatever else is inserted.
  // An abandoned slice's context stays here until its completion arrives or the endpoint closes.
  std::unordered_map<uint64_t, op_context> contexts_;
};

}  // namespace dualpath::transport
