// Opening the libfabric objects of an endpoint, registering memory, reaching peers and posting slices.
#include "transport/fabric.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "core/status.hpp"
#include "core/faults.hpp"
#include "core/stop_signals.hpp"
#include "transport/local_copy.hpp"

namespace dualpath::transport {

namespace {

std::atomic<uint64_t> next_endpoint_serial{1};
std::atomic<bool> only_named_provider{false};

// libfabric reads FI_PROVIDER once, when the first endpoint of the process opens; a user's own setting wins.
void name_provider_once(const std::string& provider) {
  static std::once_flag once;
  std::call_once(once, [&] {
    if (only_named_provider && std::getenv("FI_PROVIDER") == nullptr) setenv("FI_PROVIDER", provider.c_str(), 0);
  });
}

// The shm provider names an endpoint's region /dev/shm/PID:N:M and fails fi_enable with EBUSY when that
// file exists. A SIGKILLed process leaves its regions behind (16 MiB each), and a later process given
// the same PID could then open no endpoint. Before the first shm endpoint opens, regions of processes
// that are gone, and any of this process's own PID (it has opened none yet), are removed. Keyed by PID,
// not a once flag, so that a forked child cleans for itself too.
void remove_stale_shm_regions() {
  static std::mutex mutex;
  static pid_t cleaned_for = 0;
  std::lock_guard lock(mutex);
  const pid_t self = getpid();
  if (cleaned_for == self) return;
  cleaned_for = self;
  namespace fs = std::filesystem;
  std::error_code ec;  // no /dev/shm, or one we may not read: nothing to clean
  for (auto it = fs::directory_iterator("/dev/shm", ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::path& path = it->path();
    const std::string name = path.filename().string();
    long pid = 0;
    unsigned a = 0, b = 0;
    char tail = 0;
    if (std::sscanf(name.c_str(), "%ld:%u:%u%c", &pid, &a, &b, &tail) != 3 || pid <= 0) continue;
    const bool gone = kill(pid_t(pid), 0) != 0 && errno == ESRCH;
    if (!gone && pid != self) continue;
    std::error_code removed;  // one that went meanwhile (its owner cleaned up) is no error
    if (fs::remove(path, removed)) spdlog::debug("transport: removed stale shm region {}", name);
  }
}

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

}  // namespace

void load_only_named_provider() { only_named_provider = true; }

std::string fabric_error(const char* what, ssize_t rc) {
  return fmt::format("{} failed: {} ({})", what, fi_strerror(static_cast<int>(-rc)), rc);
}

bool is_connection_error(int err) {
  switch (err) {
    case FI_ECONNREFUSED:
    case FI_ECONNRESET:
    case FI_ECONNABORTED:
    case FI_EHOSTUNREACH:
    case FI_ENOTCONN:
    case FI_ETIMEDOUT:
    case EPIPE: return true;
    default: return false;
  }
}

fabric_core::~fabric_core() {
  if (domain) fi_close(&domain->fid);
  if (fabric) fi_close(&fabric->fid);
  if (info) fi_freeinfo(info);
}

memory_region::impl::~impl() {
  if (!owner_address.empty()) local_copy::remove(owner_address, remote.key);
  if (mr) fi_close(&mr->fid);
}

memory_region::memory_region(std::unique_ptr<impl> state) : impl_(std::move(state)) {}
memory_region::~memory_region() = default;
std::byte* memory_region::data() const { return impl_->base; }
uint64_t memory_region::size() const { return impl_->length; }
remote_region memory_region::remote() const { return impl_->remote; }

fabric_port::fabric_port(const fabric_options& opts) : opts_(opts), serial_(next_endpoint_serial++) {
  // A constructor that throws runs no destructor: close what was opened so far by hand.
  try {
    open();
  } catch (...) {
    close();
    throw;
  }
  // shm alone guards peers with spin locks (fabric_options::provider_lock).
  if (opts_.provider_lock && std::strstr(provider_name(), "shm") != nullptr) {
    call_lock_ = opts_.provider_lock.get();
    own_slot_ = call_lock_slot(address());
  }
  local_copies_ = opts_.local_copies && std::strcmp(provider_name(), "shm") == 0;
  foreign_copies_ = local_copies_ && (mr_mode_ & FI_MR_VIRT_ADDR);
}

void fabric_port::open() {
  const auto& opts = opts_;
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
  name_provider_once(opts.provider);
  if (opts.provider == "shm") remove_stale_shm_regions();
  const int rc = fi_getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &info);
  fi_freeinfo(hints);
  reclaim_signals();  // providers' libraries may have installed signal handlers of their own
  if (rc != 0 || !info) {
    throw user_error(fmt::format(
        "transport: libfabric provider '{}'{} offers no RDM endpoint with RMA: {} (check `fi_info -p {}`)",
        opts.provider, opts.domain.empty() ? "" : " domain '" + opts.domain + "'", fi_strerror(-rc), opts.provider));
  }
  core_->info = info;
  // Delivery complete: a write completes once its bytes are in the target buffer, so the target's
  // verdict (bad key, range) comes back as an error completion and a finished slice has truly landed.
  // shm completes only after the copy anyway, and asking it for delivery complete loses the error
  // response of a refused key (the initiator would wait for the timeout instead).
  if (std::strcmp(info->fabric_attr->prov_name, "shm") != 0) info->tx_attr->op_flags |= FI_DELIVERY_COMPLETE;
  mr_mode_ = info->domain_attr->mr_mode;
  cq_data_size_ = info->domain_attr->cq_data_size;
  auto check = [&](int r, const char* what) {
    if (r != 0) {
      throw user_error(
          fmt::format("transport: provider '{}': {}", info->fabric_attr->prov_name, fabric_error(what, r)));
    }
  };
  check(fi_fabric(info->fabric_attr, &core_->fabric, nullptr), "fi_fabric");
  check(fi_domain(core_->fabric, info, &core_->domain, nullptr), "fi_domain");
  check(fi_endpoint(core_->domain, info, &ep_, nullptr), "fi_endpoint");
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  check(fi_av_open(core_->domain, &av_attr, &av_, nullptr), "fi_av_open");
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_DATA;
  cq_attr.wait_obj = FI_WAIT_NONE;
  cq_attr.size = std::max<size_t>(4096, info->tx_attr->size + info->rx_attr->size);
  check(fi_cq_open(core_->domain, &cq_attr, &cq_, nullptr), "fi_cq_open");
  check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind(av)");
  check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
  check(fi_enable(ep_), "fi_enable");
  size_t len = 0;
  fi_getname(&ep_->fid, nullptr, &len);
  address_bytes name(len);
  if (fi_getname(&ep_->fid, name.data(), &len) == 0) {
    name.resize(len);
    std::lock_guard lock(registry().mutex);
    registry().alive[name] = alive_;
  }
}

fabric_port::~fabric_port() { close(); }

void fabric_port::close() {
  alive_->store(false);
  if (ep_) fi_close(&ep_->fid);
  if (av_) fi_close(&av_->fid);
  if (cq_) fi_close(&cq_->fid);
  ep_ = nullptr;
  av_ = nullptr;
  cq_ = nullptr;
}

bool fabric_port::stream_provider() const {
  const char* prov = provider_name();
  return std::strstr(prov, "tcp") != nullptr || std::strstr(prov, "sockets") != nullptr;
}

address_bytes fabric_port::address() const {
  size_t len = 0;
  fi_getname(&ep_->fid, nullptr, &len);  // asks for the size
  address_bytes out(len);
  const int rc = fi_getname(&ep_->fid, out.data(), &len);
  if (rc != 0) throw std::runtime_error(fabric_error("fi_getname", rc));
  out.resize(len);
  return out;
}

uint32_t fabric_port::connect(const address_bytes& peer) {
  if (peer.empty()) throw user_error("transport: connect() got an empty peer address");
  auto local_flag = [&] {  // an endpoint of this process at that address: its liveness is known directly
    std::lock_guard lock(registry().mutex);
    auto it = registry().alive.find(peer);
    return it != registry().alive.end() ? it->second.lock() : nullptr;
  };
  if (auto it = peer_index_.find(peer); it != peer_index_.end()) {
    auto& p = peers_[it->second];
    p.dead_reason.clear();  // reconnecting revives a peer marked dead (a node that rejoined at the same address)
    p.local_alive = local_flag();
    return it->second;
  }
  fi_addr_t addr = FI_ADDR_UNSPEC;
  const int n = fi_av_insert(av_, peer.data(), 1, &addr, 0, nullptr);
  if (n != 1) {
    throw user_error(
        fmt::format("transport: peer address of {} bytes was rejected by provider '{}' "
                    "(an address from another provider?)",
                    peer.size(), provider_name()));
  }
  const auto index = static_cast<uint32_t>(peers_.size());
  peers_.push_back(peer_state{
      peer, addr, {}, local_flag(), call_lock_slot(peer), foreign_copies_ ? local_copy::address_pid(peer) : 0});
  peer_index_.emplace(peer, index);
  return index;
}

std::unique_ptr<memory_region> fabric_port::register_memory(void* base, uint64_t length) {
  if (!base) throw user_error("transport: register_memory: base pointer is null");
  if (length == 0) throw user_error(fmt::format("transport: register_memory: zero-length region at {}", base));
  if (reinterpret_cast<uintptr_t>(base) % 8 != 0) {
    throw user_error(fmt::format("transport: register_memory: base {} is not 8-byte aligned", base));
  }
  auto r = std::make_unique<memory_region::impl>();
  r->core = core_;
  r->owner = serial_;
  r->base = static_cast<std::byte*>(base);
  r->length = length;
  const uint64_t access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
  const uint64_t requested_key = (mr_mode_ & FI_MR_PROV_KEY) ? 0 : next_key_++;
  int rc = fi_mr_reg(core_->domain, base, length, access, 0, requested_key, 0, &r->mr, nullptr);
  if (rc != 0) {
    throw user_error(fmt::format("transport: register_memory of {} bytes at {} on '{}': {}", length, base,
                                 provider_name(), fabric_error("fi_mr_reg", rc)));
  }
  if (mr_mode_ & FI_MR_ENDPOINT) {
    rc = fi_mr_bind(r->mr, &ep_->fid, 0);
    if (rc == 0) rc = fi_mr_enable(r->mr);
    if (rc != 0) throw std::runtime_error(fabric_error("fi_mr_bind/enable", rc));
  }
  r->desc = fi_mr_desc(r->mr);
  r->remote.addr = (mr_mode_ & FI_MR_VIRT_ADDR) ? reinterpret_cast<uint64_t>(base) : 0;
  r->remote.key = fi_mr_key(r->mr);
  r->remote.length = length;
  if (local_copies_) {
    r->owner_address = address();
    local_copy::add(r->owner_address, r->remote.key, r->remote.addr, r->base, length);
  }
  return std::make_unique<memory_region>(std::move(r));
}

status fabric_port::reachable(uint32_t peer) {
  auto& p = peers_.at(peer);
  if (p.local_alive && !p.local_alive->load()) p.dead_reason = "its endpoint was closed";
  if (p.dead_reason.empty()) return {};
  return status(errc::unavailable, p.dead_reason);
}

void fabric_port::mark_down(uint32_t peer, const std::string& why) {
  if (peer < peers_.size()) peers_[peer].dead_reason = why;
}

post_result fabric_port::post(const slice& s) {
  const char* verb = !s.is_write         ? "fi_read"
                     : !s.pieces.empty() ? "fi_writev"
                     : s.carries_data    ? "fi_writedata"
                                         : "fi_write";
  if (faults::fire(faults::point::fabric_post)) {
    return {post_result::refused,
            fabric_error(verb, -FI_EIO) + " [injected fault: " + faults::name(faults::point::fabric_post) + "]"};
  }
  const auto& peer = peers_.at(s.peer);
  if (local_copies_ && !s.carries_data) {
    const local_piece whole{s.local, s.length};
    const local_piece* pieces = s.pieces.empty() ? &whole : s.pieces.data();
    const size_t count = s.pieces.empty() ? 1 : s.pieces.size();
    const int pid = peer.foreign_pid;  // 0 for a peer of this process: found by its registration
    const bool copied = s.is_write ? local_copy::write(peer.address, s.key, s.remote_addr, pieces, count, pid)
                                   : local_copy::read(peer.address, s.key, s.remote_addr, s.local, s.length, pid);
    if (copied) {
      copied_.push_back(s.id);
      local_copies_done_++;
      return {post_result::accepted, {}};
    }
  }
  auto& c = contexts_[s.id];
  c.slice = s.id;
  const fi_addr_t dest = peer.fi_addr;
  ssize_t rc;
  const held_call serial(call_lock_, peer.lock_slot);
  if (!s.is_write) {
    rc = fi_read(ep_, s.local, s.length, s.desc, dest, s.remote_addr, s.key, &c.ctx);
  } else if (!s.pieces.empty()) {
    std::array<iovec, endpoint::max_gather> iov;
    std::array<void*, endpoint::max_gather> descs;
    const size_t n = std::min(s.pieces.size(), iov.size());  // endpoint::write_gather keeps it within
    for (size_t i = 0; i < n; ++i) {
      iov[i] = {s.pieces[i].at, s.pieces[i].length};
      descs[i] = s.desc;
    }
    rc = fi_writev(ep_, iov.data(), descs.data(), n, dest, s.remote_addr, s.key, &c.ctx);
  } else if (s.carries_data) {
    rc = fi_writedata(ep_, s.local, s.length, s.desc, s.data, dest, s.remote_addr, s.key, &c.ctx);
  } else {
    rc = fi_write(ep_, s.local, s.length, s.desc, dest, s.remote_addr, s.key, &c.ctx);
  }
  if (rc == 0) return {post_result::accepted, {}};
  contexts_.erase(s.id);  // not posted: the provider keeps no reference to it
  if (rc == -FI_EAGAIN) return {post_result::try_again, {}};
  return {post_result::refused, fabric_error(verb, rc)};
}

uint64_t fabric_port::release(void* context) {
  const uint64_t id = static_cast<op_context*>(context)->slice;
  contexts_.erase(id);
  return id;
}

}  // namespace dualpath::transport
