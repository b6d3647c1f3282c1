// libfabric RDM endpoint with a software two-class arbiter and rate cap (see endpoint.hpp).
#include "transport/endpoint.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "core/errors.hpp"
#include "transport/arbiter.hpp"
#include "transport/fabric.hpp"
#include "transport/token_bucket.hpp"

namespace dualpath::transport {

namespace {

using clock = std::chrono::steady_clock;

std::atomic<uint64_t> next_endpoint_serial{1};

// One posted (or to-be-posted) RMA operation. The fi_context2 comes first: providers that ask for
// FI_CONTEXT use it as scratch space, and completions hand its address back to us.
struct slice_op {
  fi_context2 ctx{};
  uint64_t id = 0;
  uint64_t transfer = 0;
  std::byte* local = nullptr;
  void* desc = nullptr;
  uint64_t length = 0;
  uint64_t remote_addr = 0;
  uint64_t key = 0;
  uint32_t peer = 0;
  bool is_write = true;
  bool carries_data = false;
  uint64_t data = 0;
  bool posted = false;
  bool abandoned = false;  // timed out while the provider still owns it: ignore its completion
  clock::time_point first_attempt{};
  clock::time_point posted_at{};
};

struct transfer_state {
  uint64_t context = 0;
  traffic_class tc = traffic_class::kv;
  uint32_t peer = 0;
  uint64_t bytes = 0;
  uint64_t slices_total = 0;
  uint64_t slices_done = 0;
  uint64_t held_last = 0;  // id of the slice with remote data, queued once all others completed
};

struct peer_state {
  address_bytes address;
  fi_addr_t fi_addr = FI_ADDR_UNSPEC;
  std::string dead_reason;  // non-empty: transfers to it fail at once
  std::shared_ptr<std::atomic<bool>> local_alive;  // set when the peer is an endpoint of this process
};

// Endpoints of this process by address. A peer endpoint closed in the same process must not be
// targeted again: shm would touch its unmapped region and crash instead of failing the transfer.
struct local_registry {
  std::mutex mutex;
  std::map<address_bytes, std::weak_ptr<std::atomic<bool>>> alive;
};
local_registry& registry() {
  static local_registry r;
  return r;
}

bool is_connection_error(int err) {
  switch (err) {
    case FI_ECONNREFUSED:
    case FI_ECONNRESET:
    case FI_ECONNABORTED:
    case FI_EHOSTUNREACH:
    case FI_ENOTCONN:
    case FI_ETIMEDOUT:
    case EPIPE:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string fabric_error(const char* what, ssize_t rc) {
  return fmt::format("{} failed: {} ({})", what, fi_strerror(static_cast<int>(-rc)), rc);
}

fabric_core::~fabric_core() {
  if (domain) fi_close(&domain->fid);
  if (fabric) fi_close(&fabric->fid);
  if (info) fi_freeinfo(info);
}

memory_region::impl::~impl() {
  if (mr) fi_close(&mr->fid);
}

memory_region::memory_region(std::unique_ptr<impl> state) : impl_(std::move(state)) {}
memory_region::~memory_region() = default;
std::byte* memory_region::data() const { return impl_->base; }
uint64_t memory_region::size() const { return impl_->length; }
remote_region memory_region::remote() const { return impl_->remote; }

struct endpoint::impl {
  fabric_options opts;
  uint64_t serial = next_endpoint_serial++;
  std::shared_ptr<fabric_core> core = std::make_shared<fabric_core>();
  fid_ep* ep = nullptr;
  fid_av* av = nullptr;
  fid_cq* cq = nullptr;
  uint64_t mr_mode = 0;
  size_t cq_data_size = 0;
  uint64_t next_key = 1;
  std::shared_ptr<std::atomic<bool>> alive = std::make_shared<std::atomic<bool>>(true);

  arbiter arb;
  token_bucket tx_bucket;  // writes leave through this CNIC
  token_bucket rx_bucket;  // reads come in through it
  uint32_t kv_window;
  uint64_t kv_guard = 0;        // kv slice and window while the model guard is on; 0 = no guard

  std::vector<peer_state> peers;
  std::map<address_bytes, uint32_t> peer_index;
  std::unordered_map<uint64_t, std::unique_ptr<slice_op>> ops;
  std::unordered_map<uint64_t, transfer_state> transfers;
  uint64_t next_op = 1;
  uint64_t next_transfer = 1;
  uint32_t inflight = 0;
  std::set<uint64_t> posted;  // ids of slices the provider holds that still count (not abandoned)
  uint32_t inflight_kv = 0;
  uint64_t inflight_kv_bytes = 0;
  uint32_t inflight_model = 0;
  uint32_t model_pending = 0;        // model transfers submitted and not finished
  clock::time_point last_model{};    // last model submit or finish
  uint32_t model_ready = 0;  // model completions in `done` not yet handed out

  std::vector<completion> done;
  std::vector<arrival> arrived;
  transfer_stats stats;
  uint64_t orphan_errors = 0;  // error completions without a context (a dead peer can raise one per poll)

  explicit impl(const fabric_options& o)
      : opts(o),
        arb(o.isolation, o.kv_share),
        tx_bucket(o.rate_gb_per_s * 1e9, static_cast<double>(o.slice_bytes)),
        rx_bucket(o.rate_gb_per_s * 1e9, static_cast<double>(o.slice_bytes)),
        // With isolation, kv never fills the whole window: a model slice can always be posted at once.
        kv_window(o.isolation ? std::max<uint32_t>(1, o.max_inflight - 1) : o.max_inflight) {}

  ~impl() {
    if (orphan_errors > 1)
      spdlog::warn("transport: {} error completions without context on '{}' in all", orphan_errors, opts.provider);
    alive->store(false);
    if (ep) fi_close(&ep->fid);
    if (av) fi_close(&av->fid);
    if (cq) fi_close(&cq->fid);
  }

  class_stats& cls(traffic_class tc) { return tc == traffic_class::model ? stats.model : stats.kv; }

  void open();
  void fail(uint64_t transfer_id, const std::string& why);
  void finish(uint64_t transfer_id);
  void drop_op(uint64_t id);
  void on_slice_done(slice_op& op);
  void on_slice_error(slice_op& op, int err, const std::string& why);
  void progress();
  void check_timeouts(clock::time_point now);
  void schedule();
  void split(slice_op& op);
  ssize_t post(slice_op& op);
  void submit(traffic_class tc, bool is_write, const memory_region& local, uint64_t local_offset,
              uint32_t peer, const remote_region& remote, uint64_t remote_offset, uint64_t length,
              uint64_t context, std::optional<uint64_t> remote_data);
};

void endpoint::impl::open() {
  if (opts.slice_bytes == 0) throw user_error("transport: slice_bytes must be positive");
  if (opts.max_inflight == 0) throw user_error("transport: max_inflight must be positive");
  if (opts.rate_gb_per_s < 0) throw user_error("transport: rate_gb_per_s must not be negative");
  if (opts.timeout.count() <= 0) throw user_error("transport: timeout must be positive");

  fi_info* hints = fi_allocinfo();
  if (!hints) throw std::bad_alloc();
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  // Everything we know how to honour; the provider answers with the subset it needs.
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->fabric_attr->prov_name = strdup(opts.provider.c_str());
  if (!opts.domain.empty()) hints->domain_attr->name = strdup(opts.domain.c_str());
  fi_info* info = nullptr;
  const int rc = fi_getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &info);
  fi_freeinfo(hints);
  if (rc != 0 || !info) {
    throw user_error(fmt::format(
        "transport: libfabric provider '{}'{} offers no RDM endpoint with RMA: {} (check `fi_info -p {}`)",
        opts.provider, opts.domain.empty() ? "" : " domain '" + opts.domain + "'", fi_strerror(-rc),
        opts.provider));
  }
  core->info = info;
  // Delivery complete: a write completes once its bytes are in the target buffer, so the target's
  // verdict (bad key, range) comes back as an error completion and a finished slice has truly landed.
  // shm completes only after the copy anyway, and asking it for delivery complete loses the error
  // response of a refused key (the initiator would wait for the timeout instead).
  if (std::strcmp(info->fabric_attr->prov_name, "shm") != 0) info->tx_attr->op_flags |= FI_DELIVERY_COMPLETE;
  mr_mode = info->domain_attr->mr_mode;
  cq_data_size = info->domain_attr->cq_data_size;
  auto check = [&](int r, const char* what) {
    if (r != 0) {
      throw user_error(fmt::format("transport: provider '{}': {}", info->fabric_attr->prov_name, fabric_error(what, r)));
    }
  };
  // A stream provider serialises all slices to a peer in one socket; there the kv slice and the
  // kv bytes in flight next to model traffic are what a model message waits behind.
  const char* prov = info->fabric_attr->prov_name;
  const bool stream = std::strstr(prov, "tcp") != nullptr || std::strstr(prov, "sockets") != nullptr;
  kv_guard = opts.kv_guard_bytes ? opts.kv_guard_bytes : (stream ? uint64_t{32} << 10 : 0);
  if (!opts.isolation || kv_guard >= opts.slice_bytes) kv_guard = 0;  // FIFO, or slices already that small
  check(fi_fabric(info->fabric_attr, &core->fabric, nullptr), "fi_fabric");
  check(fi_domain(core->fabric, info, &core->domain, nullptr), "fi_domain");
  check(fi_endpoint(core->domain, info, &ep, nullptr), "fi_endpoint");
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  check(fi_av_open(core->domain, &av_attr, &av, nullptr), "fi_av_open");
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_DATA;
  cq_attr.wait_obj = FI_WAIT_NONE;
  cq_attr.size = std::max<size_t>(4096, info->tx_attr->size + info->rx_attr->size);
  check(fi_cq_open(core->domain, &cq_attr, &cq, nullptr), "fi_cq_open");
  check(fi_ep_bind(ep, &av->fid, 0), "fi_ep_bind(av)");
  check(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
  check(fi_enable(ep), "fi_enable");
  {
    size_t len = 0;
    fi_getname(&ep->fid, nullptr, &len);
    address_bytes name(len);
    if (fi_getname(&ep->fid, name.data(), &len) == 0) {
      name.resize(len);
      std::lock_guard lock(registry().mutex);
      registry().alive[name] = alive;
    }
  }
  spdlog::debug("transport: opened {} endpoint (mr_mode {:#x}, cq_data {} B, tx size {}, kv guard {} B)",
                info->fabric_attr->prov_name, mr_mode, cq_data_size, info->tx_attr->size, kv_guard);
}

std::unique_ptr<endpoint> endpoint::open(const fabric_options& opts) {
  auto state = std::make_unique<impl>(opts);
  state->open();
  return std::unique_ptr<endpoint>(new endpoint(std::move(state)));
}

endpoint::endpoint(std::unique_ptr<impl> state) : impl_(std::move(state)) {}
endpoint::~endpoint() = default;

const fabric_options& endpoint::options() const { return impl_->opts; }
std::string endpoint::provider_name() const { return impl_->core->info->fabric_attr->prov_name; }

address_bytes endpoint::address() const {
  size_t len = 0;
  fi_getname(&impl_->ep->fid, nullptr, &len);  // asks for the size
  address_bytes out(len);
  const int rc = fi_getname(&impl_->ep->fid, out.data(), &len);
  if (rc != 0) throw std::runtime_error(fabric_error("fi_getname", rc));
  out.resize(len);
  return out;
}

uint32_t endpoint::connect(const address_bytes& peer) {
  auto& s = *impl_;
  if (peer.empty()) throw user_error("transport: connect() got an empty peer address");
  if (auto it = s.peer_index.find(peer); it != s.peer_index.end()) {
    s.peers[it->second].dead_reason.clear();  // reconnecting revives a peer marked dead
    return it->second;
  }
  fi_addr_t addr = FI_ADDR_UNSPEC;
  const int n = fi_av_insert(s.av, peer.data(), 1, &addr, 0, nullptr);
  if (n != 1) {
    throw user_error(fmt::format("transport: peer address of {} bytes was rejected by provider '{}' "
                                 "(an address from another provider?)",
                                 peer.size(), provider_name()));
  }
  const auto index = static_cast<uint32_t>(s.peers.size());
  std::shared_ptr<std::atomic<bool>> local;
  {
    std::lock_guard lock(registry().mutex);
    if (auto it = registry().alive.find(peer); it != registry().alive.end()) local = it->second.lock();
  }
  s.peers.push_back(peer_state{peer, addr, {}, std::move(local)});
  s.peer_index.emplace(peer, index);
  return index;
}

std::unique_ptr<memory_region> endpoint::register_memory(void* base, uint64_t length) {
  auto& s = *impl_;
  if (!base) throw user_error("transport: register_memory: base pointer is null");
  if (length == 0) throw user_error(fmt::format("transport: register_memory: zero-length region at {}", base));
  if (reinterpret_cast<uintptr_t>(base) % 8 != 0) {
    throw user_error(fmt::format("transport: register_memory: base {} is not 8-byte aligned", base));
  }
  auto r = std::make_unique<memory_region::impl>();
  r->core = s.core;
  r->owner = s.serial;
  r->base = static_cast<std::byte*>(base);
  r->length = length;
  const uint64_t access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
  const uint64_t requested_key = (s.mr_mode & FI_MR_PROV_KEY) ? 0 : s.next_key++;
  int rc = fi_mr_reg(s.core->domain, base, length, access, 0, requested_key, 0, &r->mr, nullptr);
  if (rc != 0) {
    throw user_error(fmt::format("transport: register_memory of {} bytes at {} on '{}': {}", length, base,
                                 provider_name(), fabric_error("fi_mr_reg", rc)));
  }
  if (s.mr_mode & FI_MR_ENDPOINT) {
    rc = fi_mr_bind(r->mr, &s.ep->fid, 0);
    if (rc == 0) rc = fi_mr_enable(r->mr);
    if (rc != 0) throw std::runtime_error(fabric_error("fi_mr_bind/enable", rc));
  }
  r->desc = fi_mr_desc(r->mr);
  r->remote.addr = (s.mr_mode & FI_MR_VIRT_ADDR) ? reinterpret_cast<uint64_t>(base) : 0;
  r->remote.key = fi_mr_key(r->mr);
  r->remote.length = length;
  return std::make_unique<memory_region>(std::move(r));
}

void endpoint::impl::drop_op(uint64_t id) {
  auto it = ops.find(id);
  if (it == ops.end()) return;
  if (it->second->posted) {
    it->second->abandoned = true;  // the provider still holds its context; freed on completion or close
  } else {
    ops.erase(it);
  }
}

void endpoint::impl::finish(uint64_t transfer_id) {
  auto it = transfers.find(transfer_id);
  if (it == transfers.end()) return;
  auto& c = cls(it->second.tc);
  c.transfers++;
  if (it->second.tc == traffic_class::model) {
    model_ready++;
    model_pending--;
    last_model = clock::now();
  }
  done.push_back(completion{it->second.context, true, {}});
  transfers.erase(it);
}

void endpoint::impl::fail(uint64_t transfer_id, const std::string& why) {
  auto it = transfers.find(transfer_id);
  if (it == transfers.end()) return;
  const transfer_state t = it->second;
  spdlog::warn("transport: {} transfer (context {}, {} bytes, peer {}) failed: {}", to_string(t.tc), t.context,
               t.bytes, t.peer, why);
  auto& c = cls(t.tc);
  c.transfers++;
  c.errors++;
  if (t.tc == traffic_class::model) {
    model_ready++;
    model_pending--;
    last_model = clock::now();
  }
  done.push_back(completion{t.context, false, why});
  if (t.held_last) drop_op(t.held_last);
  transfers.erase(it);
  // Queued slices of this transfer are dropped when the arbiter reaches them; posted ones are abandoned.
  for (auto pit = posted.begin(); pit != posted.end();) {
    auto& op = *ops.at(*pit);
    if (op.transfer == transfer_id) {
      op.abandoned = true;
      inflight--;
      if (t.tc == traffic_class::kv) {
        inflight_kv--;
        inflight_kv_bytes -= op.length;
      } else {
        inflight_model--;
      }
      pit = posted.erase(pit);
    } else {
      ++pit;
    }
  }
}

void endpoint::impl::on_slice_done(slice_op& op) {
  const uint64_t id = op.id;
  const uint64_t tid = op.transfer;
  const uint64_t len = op.length;
  if (op.abandoned) {
    ops.erase(id);
    return;
  }
  inflight--;
  posted.erase(id);
  auto it = transfers.find(tid);
  ops.erase(id);
  if (it == transfers.end()) return;
  auto& t = it->second;
  if (t.tc == traffic_class::kv) {
    inflight_kv--;
    inflight_kv_bytes -= len;
  } else {
    inflight_model--;
  }
  auto& c = cls(t.tc);
  c.slices++;
  c.bytes += len;
  t.slices_done++;
  if (t.held_last && t.slices_done + 1 == t.slices_total) {
    // Every other slice has landed: now the one carrying remote data may go (ordering across slices
    // is not guaranteed by every provider, so the notification must not overtake the data).
    arb.push_front(arbiter_item{t.tc, t.held_last, ops.at(t.held_last)->length});
    t.held_last = 0;
  }
  if (t.slices_done == t.slices_total) finish(tid);
}

void endpoint::impl::on_slice_error(slice_op& op, int err, const std::string& why) {
  const uint64_t tid = op.transfer;
  const uint32_t peer = op.peer;
  if (op.abandoned) {
    ops.erase(op.id);
    return;
  }
  auto it = transfers.find(tid);
  if (is_connection_error(err) && peer < peers.size()) peers[peer].dead_reason = why;
  if (it != transfers.end()) {
    fail(tid, why);  // marks this op abandoned and releases its window slot
  }
  ops.erase(op.id);
}

void endpoint::impl::progress() {
  fi_cq_data_entry entries[64];
  for (;;) {
    const ssize_t n = fi_cq_read(cq, entries, 64);
    if (n == -FI_EAGAIN) return;
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      if (fi_cq_readerr(cq, &err, 0) != 1) return;
      char buf[256] = {};
      const char* prov = fi_cq_strerror(cq, err.prov_errno, err.err_data, buf, sizeof(buf));
      std::string why = fmt::format("{} ({})", fi_strerror(err.err), prov ? prov : "");
      if (!err.op_context) {
        if (orphan_errors++ == 0)
          spdlog::warn("transport: error completion without context on '{}': {} (further ones are only counted)",
                       opts.provider, why);
        continue;
      }
      auto* op = reinterpret_cast<slice_op*>(err.op_context);
      why = fmt::format("{} {} bytes to peer {}: {}", op->is_write ? "write of" : "read of", op->length, op->peer,
                        why);
      on_slice_error(*op, err.err, why);
      continue;
    }
    if (n < 0) {
      spdlog::error("transport: fi_cq_read on '{}': {}", opts.provider, fabric_error("fi_cq_read", n));
      return;
    }
    for (ssize_t i = 0; i < n; ++i) {
      const auto& e = entries[i];
      if (e.flags & FI_REMOTE_CQ_DATA) {
        arrived.push_back(arrival{e.data, e.len});
        stats.arrivals++;
        continue;
      }
      if (e.op_context) on_slice_done(*reinterpret_cast<slice_op*>(e.op_context));
    }
    if (n < 64) return;
  }
}

void endpoint::impl::check_timeouts(clock::time_point now) {
  std::vector<std::pair<uint64_t, uint32_t>> expired;
  for (uint64_t id : posted) {
    const auto& op = *ops.at(id);
    if (now - op.posted_at > opts.timeout) expired.emplace_back(op.transfer, op.peer);
  }
  for (auto [tid, peer] : expired) {
    const std::string why = fmt::format("no completion from peer {} within {} ms (peer gone?)", peer,
                                        opts.timeout.count());
    if (peer < peers.size()) peers[peer].dead_reason = why;
    fail(tid, why);
  }
}

ssize_t endpoint::impl::post(slice_op& op) {
  const fi_addr_t dest = peers[op.peer].fi_addr;
  if (!op.is_write) {
    return fi_read(ep, op.local, op.length, op.desc, dest, op.remote_addr, op.key, &op.ctx);
  }
  if (op.carries_data) {
    return fi_writedata(ep, op.local, op.length, op.desc, op.data, dest, op.remote_addr, op.key, &op.ctx);
  }
  return fi_write(ep, op.local, op.length, op.desc, dest, op.remote_addr, op.key, &op.ctx);
}

// Cuts kv slice `op` (the arbiter's next item) after kv_guard bytes; the rest keeps its turn right behind.
// A piece that carries remote data stays last: it is held until every other slice has landed.
void endpoint::impl::split(slice_op& op) {
  auto rest = std::make_unique<slice_op>();
  rest->id = next_op++;
  rest->transfer = op.transfer;
  rest->local = op.local + kv_guard;
  rest->desc = op.desc;
  rest->length = op.length - kv_guard;
  rest->remote_addr = op.remote_addr + kv_guard;
  rest->key = op.key;
  rest->peer = op.peer;
  rest->is_write = op.is_write;
  rest->carries_data = op.carries_data;
  rest->data = op.data;
  op.length = kv_guard;
  op.carries_data = false;
  auto& t = transfers.at(op.transfer);
  t.slices_total++;
  std::optional<arbiter_item> behind;
  if (rest->carries_data) {
    t.held_last = rest->id;
  } else {
    behind = arbiter_item{traffic_class::kv, rest->id, rest->length};
  }
  arb.split_kv_front(kv_guard, behind);
  ops.emplace(rest->id, std::move(rest));
}

void endpoint::impl::schedule() {
  // Bounded work per call: with providers that copy inside the post call, the owner's thread must come
  // back between at most a window of slices, or a model transfer submitted meanwhile would wait.
  // The budget is in bytes so that finer kv slices do not shrink the work per call.
  const auto now0 = clock::now();
  const bool guard = kv_guard > 0 && (model_pending > 0 || now0 - last_model < opts.model_guard);
  const uint64_t slot = opts.slice_bytes;
  for (uint64_t budget = uint64_t{opts.max_inflight} * slot; budget > 0;) {
    auto item = arb.peek();
    if (!item) return;
    auto op_it = ops.find(item->id);
    if (op_it == ops.end() || transfers.find(op_it->second->transfer) == transfers.end()) {
      arb.pop();  // its transfer already failed
      if (op_it != ops.end()) ops.erase(op_it);
      continue;
    }
    auto& op = *op_it->second;
    auto& peer = peers[op.peer];
    if (peer.local_alive && !peer.local_alive->load()) peer.dead_reason = "its endpoint was closed";
    if (!peer.dead_reason.empty()) {
      arb.pop();
      const uint64_t tid = op.transfer;
      const std::string why = fmt::format("peer {} is unreachable: {}", op.peer, peer.dead_reason);
      ops.erase(op_it);
      fail(tid, why);
      continue;
    }
    if (guard && item->tc == traffic_class::kv && op.length > kv_guard) {
      split(op);  // next to model traffic, kv goes in guard-sized pieces
      continue;
    }
    if (!opts.isolation) {
      if (inflight >= opts.max_inflight) return;
    } else if (item->tc == traffic_class::model) {
      // kv occupies posting slots by its bytes (kv slices may be finer than slice_bytes).
      if (inflight_model + (inflight_kv_bytes + slot - 1) / slot >= opts.max_inflight) return;
    } else {
      // While a model slice is in flight, new kv bytes would only add work ahead of its completion on
      // both ends of the stream; kv waits unless its share is due (model slices queued behind it).
      if (guard && inflight_model > 0 && !arb.model_waiting()) return;
      const uint64_t window = uint64_t{kv_window} * slot;
      const uint64_t limit = guard ? std::min(kv_guard, window) : window;
      if (inflight_kv_bytes > 0 && inflight_kv_bytes + op.length > limit) return;
      if (uint64_t{inflight_model} * slot + inflight_kv_bytes + op.length > uint64_t{opts.max_inflight} * slot) return;
    }
    const auto now = clock::now();
    auto& bucket = op.is_write ? tx_bucket : rx_bucket;
    // A priority lane does not wait for the debt bulk traffic left in the bucket: model may go while
    // the debt is under one slice. Its bytes are still charged, so kv pays them back and the long-run
    // rate stays at the cap; model alone beyond the cap is throttled like everything else.
    const double allowance =
        opts.isolation && item->tc == traffic_class::model ? static_cast<double>(opts.slice_bytes) : 0.0;
    if (!bucket.ready(now, allowance)) return;
    if (op.first_attempt == clock::time_point{}) op.first_attempt = now;
    const ssize_t rc = post(op);
    if (rc == -FI_EAGAIN) {
      if (now - op.first_attempt > opts.timeout) {
        arb.pop();
        const uint64_t tid = op.transfer;
        ops.erase(op_it);
        fail(tid, fmt::format("provider queue to peer stayed full for {} ms", opts.timeout.count()));
        continue;
      }
      return;  // needs progress first
    }
    arb.pop();
    budget -= std::min(budget, op.length);
    if (rc != 0) {
      const uint64_t tid = op.transfer;
      const std::string why = fabric_error(op.is_write ? "fi_write" : "fi_read", rc);
      ops.erase(op_it);
      fail(tid, why);
      continue;
    }
    bucket.charge(op.length);
    op.posted = true;
    op.posted_at = now;
    posted.insert(op.id);
    inflight++;
    if (item->tc == traffic_class::kv) {
      inflight_kv++;
      inflight_kv_bytes += op.length;
    } else {
      inflight_model++;
    }
    if (opts.isolation) {
      // Some providers copy inside the post call (shm with CMA), so each kv post is real work done
      // on the owner's thread. Once a model transfer has finished, hand control back so its owner
      // sees it now rather than after a window of kv copies.
      progress();
      if (model_ready > 0) return;
    }
  }
}

void endpoint::impl::submit(traffic_class tc, bool is_write, const memory_region& local, uint64_t local_offset,
                            uint32_t peer, const remote_region& remote, uint64_t remote_offset, uint64_t length,
                            uint64_t context, std::optional<uint64_t> remote_data) {
  const uint64_t tid = next_transfer++;
  transfers[tid] = transfer_state{context, tc, peer, length, 0, 0, 0};
  if (tc == traffic_class::model) {
    model_pending++;
    last_model = clock::now();
  }
  const char* verb = is_write ? "write" : "read";
  auto& lr = local.state();
  std::string bad;
  if (lr.owner != serial) {
    bad = "the local region was registered with another endpoint";
  } else if (length == 0) {
    bad = "zero-length transfer";
  } else if (local_offset > lr.length || length > lr.length - local_offset) {
    bad = fmt::format("local range [{}, +{}) is past the end of a {}-byte region", local_offset, length, lr.length);
  } else if (remote_offset > remote.length || length > remote.length - remote_offset) {
    bad = fmt::format("remote range [{}, +{}) is past the end of a {}-byte region", remote_offset, length,
                      remote.length);
  } else if (peer >= peers.size()) {
    bad = fmt::format("unknown peer {} ({} connected)", peer, peers.size());
  } else if (peers[peer].local_alive && !peers[peer].local_alive->load()) {
    peers[peer].dead_reason = "its endpoint was closed";
    bad = fmt::format("peer {} is unreachable: {}", peer, peers[peer].dead_reason);
  } else if (!peers[peer].dead_reason.empty()) {
    bad = fmt::format("peer {} is unreachable: {}", peer, peers[peer].dead_reason);
  } else if (remote_data && cq_data_size < 8 && (*remote_data >> (8 * cq_data_size)) != 0) {
    bad = fmt::format("remote data {:#x} does not fit the provider's {} bytes of completion data", *remote_data,
                      cq_data_size);
  }
  if (!bad.empty()) {
    fail(tid, fmt::format("{} refused: {}", verb, bad));
    return;
  }
  auto& t = transfers[tid];
  const uint64_t slice = opts.slice_bytes;
  t.slices_total = (length + slice - 1) / slice;
  for (uint64_t i = 0; i < t.slices_total; ++i) {
    auto op = std::make_unique<slice_op>();
    op->id = next_op++;
    op->transfer = tid;
    const uint64_t off = i * slice;
    op->length = std::min(slice, length - off);
    op->local = lr.base + local_offset + off;
    op->desc = lr.desc;
    op->remote_addr = remote.addr + remote_offset + off;
    op->key = remote.key;
    op->peer = peer;
    op->is_write = is_write;
    const bool last = i + 1 == t.slices_total;
    if (last && remote_data) {
      op->carries_data = true;
      op->data = *remote_data;
    }
    const arbiter_item item{tc, op->id, op->length};
    if (last && remote_data && t.slices_total > 1) {
      t.held_last = op->id;
    } else {
      arb.push(item);
    }
    ops.emplace(op->id, std::move(op));
  }
}

void endpoint::write(traffic_class tc, const memory_region& src, uint64_t src_offset, uint32_t peer,
                     const remote_region& dst, uint64_t dst_offset, uint64_t length, uint64_t context,
                     std::optional<uint64_t> remote_data) {
  impl_->submit(tc, true, src, src_offset, peer, dst, dst_offset, length, context, remote_data);
}

void endpoint::read(traffic_class tc, const memory_region& dst, uint64_t dst_offset, uint32_t peer,
                    const remote_region& src, uint64_t src_offset, uint64_t length, uint64_t context) {
  impl_->submit(tc, false, dst, dst_offset, peer, src, src_offset, length, context, std::nullopt);
}

std::vector<completion> endpoint::poll_completions() {
  auto& s = *impl_;
  s.progress();
  s.check_timeouts(clock::now());
  s.schedule();
  s.progress();
  std::vector<completion> out;
  out.swap(s.done);
  s.model_ready = 0;
  return out;
}

std::vector<arrival> endpoint::poll_arrivals() {
  auto& s = *impl_;
  s.progress();
  std::vector<arrival> out;
  out.swap(s.arrived);
  return out;
}

bool endpoint::busy() const { return !impl_->transfers.empty() || !impl_->done.empty(); }

std::optional<std::chrono::nanoseconds> endpoint::poll_delay() {
  auto& s = *impl_;
  if (!s.posted.empty() || !s.done.empty()) return std::chrono::nanoseconds{0};
  const auto item = s.arb.peek();
  if (!item) return std::nullopt;
  auto it = s.ops.find(item->id);
  if (it == s.ops.end()) return std::chrono::nanoseconds{0};  // stale entry: the next poll drops it
  auto& bucket = it->second->is_write ? s.tx_bucket : s.rx_bucket;
  return bucket.wait_time(clock::now());
}

transfer_stats endpoint::stats() const {
  auto st = impl_->stats;
  st.queued_slices = impl_->arb.size();
  st.inflight_slices = impl_->inflight;
  return st;
}

}  // namespace dualpath::transport
