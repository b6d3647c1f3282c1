#pragma once
// The KV data plane (docs/design.md §3, §4, §8): one-sided RMA of Layer Blocks between registered buffers over
// libfabric, with two traffic classes and an optional per-endpoint rate cap that emulates a CNIC.
// No libfabric type appears here: the fabric objects live behind pimpl in transport/*.cpp.
//
// Threading: an endpoint and its regions are used by one thread at a time (the traffic-queue actor that
// owns them). write()/read() only queue; posting and progress happen inside poll_completions() (at most
// `max_inflight` slices posted per call, so each call is a bounded step) and poll_arrivals(). The owner
// keeps polling while busy(); targets must poll too (shm and loopback make progress on the target side).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/call_lock.hpp"
#include "transport/host_buffer.hpp"

namespace dualpath::transport {

// A process that calls this before its first endpoint lets libfabric load only the provider that endpoint
// names (FI_PROVIDER, unless the user set it): a provider it never uses cannot install signal handlers or
// probe hardware. For processes with one provider (the `dualpath` binary); a test binary that opens shm
// and tcp endpoints does not call it.
void load_only_named_provider();

// `model`: latency-critical model traffic (collectives, PD hand-off). `kv`: bulk KV forwarding.
enum class traffic_class : uint8_t { model, kv };
const char* to_string(traffic_class tc);

struct fabric_options {
  std::string provider = "shm";    // libfabric provider name: shm, tcp, verbs, efa, ...
  std::string domain;              // optional domain (NIC / interface) name; empty = the provider's first
  uint64_t slice_bytes = 1 << 20;  // large transfers are cut into slices of at most this size
  double rate_gb_per_s = 0;        // emulated CNIC cap per direction (GB/s = 1e9 B/s); 0 = uncapped
  bool isolation = true;           // false: one FIFO for both classes (the "no isolation" baseline)
  double kv_share = 0.01;          // share of service kv gets while model traffic is also waiting
  uint32_t max_inflight = 4;       // slices posted to the provider at once (bounds head-of-line blocking)
  // Stream providers (tcp, sockets) carry every slice to a peer in one byte stream, so a model slice
  // waits behind all kv bytes posted before it. With isolation on, while model traffic is pending or was
  // seen within `model_guard`, kv is cut into slices of `kv_guard_bytes` and only one is in flight;
  // otherwise kv runs with full slices and the normal window (bulk throughput is unchanged).
  uint64_t kv_guard_bytes = 0;                  // 0 = 32 KiB on stream providers, off elsewhere; UINT64_MAX = off
  std::chrono::microseconds model_guard{2000};  // how long after model traffic the guard stays on
  std::chrono::milliseconds timeout{5000};      // a posted slice not completed by then fails its transfer
  // Endpoints that share these locks make their provider calls one at a time per shm region: a post waits
  // for other calls on its peer's region, a completion read for those on its own (the nodes emulated inside
  // one process, or node processes on one host; transport/call_lock.hpp, docs/design.md §13). Only shm takes
  // them; a stream provider's socket calls would only queue behind each other. Null: no lock.
  std::shared_ptr<call_lock> provider_lock;
  // shm: copies to peers on this host are memcpy by the poster where their memory is in reach (a peer of this
  // process, or a peer process's shared_file buffer), not a provider operation; remote completion data still
  // goes through the provider (transport/local_copy.hpp). False: every copy through the provider.
  bool local_copies = true;
  // The memory a node allocates for registration: node processes on one host use shared_file, so that their
  // peers can copy into it directly.
  host_memory buffers = host_memory::private_pages;
};

// A peer's view of a registered region: plain data, travels in Cap'n Proto messages.
// Remote offsets are relative to the region start; `addr` is the base the provider expects.
struct remote_region {
  uint64_t addr = 0;
  uint64_t key = 0;
  uint64_t length = 0;
};

// An endpoint's fabric address, opaque bytes to hand to peers.
using address_bytes = std::vector<uint8_t>;

class endpoint;

// Memory registered with one endpoint. Must not outlive the endpoint that registered it.
class memory_region {
 public:
  ~memory_region();
  memory_region(const memory_region&) = delete;
  memory_region& operator=(const memory_region&) = delete;

  std::byte* data() const;
  uint64_t size() const;
  remote_region remote() const;

  struct impl;  // fabric state; defined in transport/
  explicit memory_region(std::unique_ptr<impl> state);
  impl& state() const { return *impl_; }

 private:
  std::unique_ptr<impl> impl_;
};

// One per write()/read() call, delivered once all its slices finished (or the first failed).
struct completion {
  uint64_t context = 0;
  bool ok = false;
  std::string error;  // empty when ok
};

// Remote completion data that arrived at this endpoint: one per write() that carried remote_data.
struct arrival {
  uint64_t data = 0;
  uint64_t bytes = 0;  // length of the slice that carried it, as the provider reports it (shm does; tcp gives 0)
};

struct class_stats {
  uint64_t transfers = 0;  // write()/read() calls completed
  uint64_t slices = 0;     // slices completed
  uint64_t bytes = 0;      // bytes completed
  uint64_t errors = 0;     // transfers completed with an error
};

struct transfer_stats {
  class_stats model;
  class_stats kv;
  uint64_t arrivals = 0;
  uint64_t queued_slices = 0;    // waiting in the arbiter now
  uint64_t inflight_slices = 0;  // posted to the provider now
  uint64_t local_copies = 0;     // slices the poster copied itself (fabric_options::local_copies)
};

// A piece of a gathered write's source: [offset, +length) of the local region.
struct gather_piece {
  uint64_t offset = 0;
  uint64_t length = 0;
};

class endpoint {
 public:
  // Opens fabric, domain, RDM endpoint, address vector and completion queue of `opts.provider`.
  // Throws user_error naming the provider when it is not available or fails to start.
  static std::unique_ptr<endpoint> open(const fabric_options& opts);
  ~endpoint();
  endpoint(const endpoint&) = delete;
  endpoint& operator=(const endpoint&) = delete;

  const fabric_options& options() const;
  std::string provider_name() const;  // what libfabric actually picked, e.g. "tcp;ofi_rxm"
  address_bytes address() const;

  // Inserts `peer` into the address vector; returns its index for write()/read(). Inserting this
  // endpoint's own address gives the loopback peer (local DRAM<->HBM copies go through the NIC).
  uint32_t connect(const address_bytes& peer);

  // Registers [base, base+length) for local and remote RMA access. Throws user_error for a null base,
  // zero length or a base not aligned to 8 bytes.
  std::unique_ptr<memory_region> register_memory(void* base, uint64_t length);

  // Copies [src_offset, +length) of `src` to [dst_offset, +length) of `dst` on `peer`. Queued in `tc`,
  // sliced, rate-capped; one completion with `context` when done. `remote_data`, when set, is delivered
  // to the peer's poll_arrivals() once after every byte of this transfer has landed. A range past either
  // region's end or an unknown peer yields an error completion (checked before posting), never a throw.
  void write(traffic_class tc, const memory_region& src, uint64_t src_offset, uint32_t peer, const remote_region& dst,
             uint64_t dst_offset, uint64_t length, uint64_t context, std::optional<uint64_t> remote_data = {});

  // The most pieces one write_gather() takes here: the provider's local iov limit (at most max_gather), or 1
  // where gathering is off (a stream provider cuts kv into guard-sized pieces next to model traffic).
  uint32_t gather_limit() const;
  static constexpr uint32_t max_gather = 8;
  // As write(), of `pieces` of `src` in order into one contiguous range of `dst` from dst_offset: one RMA
  // operation whose provider gathers them (shm copies them in one system call, where a write() of each is a
  // call, a copy and a completion apiece; docs/design.md §8). 1 to gather_limit() pieces of at most
  // slice_bytes in all, or an error completion.
  void write_gather(traffic_class tc, const memory_region& src, const std::vector<gather_piece>& pieces, uint32_t peer,
                    const remote_region& dst, uint64_t dst_offset, uint64_t context);

  // Copies [src_offset, +length) of remote `src` on `peer` to [dst_offset, +length) of local `dst`.
  void read(traffic_class tc, const memory_region& dst, uint64_t dst_offset, uint32_t peer, const remote_region& src,
            uint64_t src_offset, uint64_t length, uint64_t context);

  // Non-blocking: drives progress, posts what the arbiter and rate cap allow, returns finished transfers.
  std::vector<completion> poll_completions();
  // Non-blocking: drives progress and returns remote completion data received since the last call.
  std::vector<arrival> poll_arrivals();

  // True while transfers are queued or in flight.
  bool busy() const;
  // `peer` is gone (its node was lost, docs/design.md §13): transfers to it in flight, its queued slices
  // and every later transfer to it fail at once with `why` instead of waiting for the provider's timeout.
  void mark_down(uint32_t peer, const std::string& why);
  // When the owner should poll next: zero while slices are in flight or could be posted now, the rate
  // cap's wait when only the cap holds queued slices back, nullopt when nothing is queued. (A target
  // still has to poll for arrivals on its own schedule.)
  std::optional<std::chrono::nanoseconds> poll_delay();
  transfer_stats stats() const;

  struct impl;

 private:
  explicit endpoint(std::unique_ptr<impl> state);
  std::unique_ptr<impl> impl_;
};

}  // namespace dualpath::transport
