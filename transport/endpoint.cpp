// The endpoint API over its four parts: fabric_port (libfabric objects, memory, peers, posting),
// transfer_table (what is in flight), scheduler (what to post next) and completion_loop (what finished).
#include "transport/endpoint.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/status.hpp"
#include "transport/completion_loop.hpp"
#include "transport/fabric.hpp"
#include "transport/scheduler.hpp"
#include "transport/transfer_table.hpp"

namespace dualpath::transport {

namespace {

// Refused before any fabric object exists, so a bad config costs no provider start-up.
const fabric_options& validated(const fabric_options& opts) {
  if (opts.slice_bytes == 0) throw user_error("transport: slice_bytes must be positive");
  if (opts.max_inflight == 0) throw user_error("transport: max_inflight must be positive");
  if (opts.rate_gb_per_s < 0) throw user_error("transport: rate_gb_per_s must not be negative");
  if (opts.timeout.count() <= 0) throw user_error("transport: timeout must be positive");
  return opts;
}

}  // namespace

// The libfabric poster: the scheduler posts through the port and reaps through the completion loop.
struct endpoint::impl final : poster {
  fabric_options opts;
  fabric_port port;
  transfer_table table;
  scheduler sched;
  completion_loop loop;

  explicit impl(const fabric_options& o)
      : opts(validated(o)),
        port(opts),
        sched(opts, scheduler::kv_guard_for(opts, port.stream_provider()), table, *this),
        loop(opts, port, table, sched) {}

  post_result post(const slice& s) override { return port.post(s); }
  status reachable(uint32_t peer) override { return port.reachable(peer); }
  // After each post: only the provider's own operations need its completion queue read (arrivals wait for
  // poll_arrivals), so a run of local copies (local_copy) costs no provider call apiece.
  void progress() override { loop.drain(false); }

  // Ok when `r` may be queued; otherwise why it is refused. A gathered write names its local `pieces` instead
  // of the one range from local_offset.
  status check(const memory_region& local, uint64_t local_offset, const remote_region& remote, uint64_t remote_offset,
               const transfer_request& r, const std::vector<gather_piece>* pieces);
  void submit(const memory_region& local, uint64_t local_offset, const remote_region& remote, uint64_t remote_offset,
              transfer_request r, const std::vector<gather_piece>* pieces = nullptr);
  uint32_t gather_limit() const {
    if (sched.kv_guard() > 0) return 1;
    return uint32_t(std::clamp<size_t>(port.info().tx_attr->iov_limit, 1, endpoint::max_gather));
  }
};

status endpoint::impl::check(const memory_region& local, uint64_t local_offset, const remote_region& remote,
                             uint64_t remote_offset, const transfer_request& r,
                             const std::vector<gather_piece>* pieces) {
  const auto& lr = local.state();
  const uint64_t length = r.length;
  auto refused = [](std::string why) { return status(errc::bad_input, std::move(why)); };
  if (lr.owner != port.serial()) return refused("the local region was registered with another endpoint");
  if (length == 0) return refused("zero-length transfer");
  if (pieces) {
    if (pieces->size() > gather_limit())
      return refused(fmt::format("{} pieces to gather (1 to {} here)", pieces->size(), gather_limit()));
    if (length > opts.slice_bytes)
      return refused(fmt::format("a gather of {} bytes is over the {}-byte slice", length, opts.slice_bytes));
    for (const auto& p : *pieces)
      if (p.length == 0 || p.offset > lr.length || p.length > lr.length - p.offset)
        return refused(fmt::format("local piece [{}, +{}) is empty or past the end of a {}-byte region", p.offset,
                                   p.length, lr.length));
  } else if (local_offset > lr.length || length > lr.length - local_offset) {
    return refused(
        fmt::format("local range [{}, +{}) is past the end of a {}-byte region", local_offset, length, lr.length));
  }
  if (remote_offset > remote.length || length > remote.length - remote_offset) {
    return refused(fmt::format("remote range [{}, +{}) is past the end of a {}-byte region", remote_offset, length,
                               remote.length));
  }
  if (r.peer >= port.peer_count())
    return refused(fmt::format("unknown peer {} ({} connected)", r.peer, port.peer_count()));
  if (status up = port.reachable(r.peer); !up.ok()) {
    return status(errc::unavailable, fmt::format("peer {} is unreachable: {}", r.peer, up.message()));
  }
  const size_t cq_data = port.cq_data_size();
  if (r.remote_data && cq_data < 8 && (*r.remote_data >> (8 * cq_data)) != 0) {
    return refused(fmt::format("remote data {:#x} does not fit the provider's {} bytes of completion data",
                               *r.remote_data, cq_data));
  }
  return {};
}

void endpoint::impl::submit(const memory_region& local, uint64_t local_offset, const remote_region& remote,
                            uint64_t remote_offset, transfer_request r, const std::vector<gather_piece>* pieces) {
  const status bad = check(local, local_offset, remote, remote_offset, r, pieces);
  if (!bad.ok()) {
    // Refusals complete like any failed transfer, so callers have one error path (never a throw).
    const auto now = sched.now();
    table.fail(table.open(r.context, r.tc, r.peer, r.length, now),
               fmt::format("{} refused: {}", r.is_write ? "write" : "read", bad.message()), now);
    return;
  }
  const auto& lr = local.state();
  r.local = lr.base + local_offset;
  r.desc = lr.desc;
  r.remote_addr = remote.addr + remote_offset;
  r.key = remote.key;
  if (pieces)
    for (const auto& p : *pieces) r.pieces.push_back({lr.base + p.offset, p.length});
  sched.submit(r);
}

std::unique_ptr<endpoint> endpoint::open(const fabric_options& opts) {
  auto state = std::make_unique<impl>(opts);
  const fi_info& info = state->port.info();
  spdlog::debug("transport: opened {} endpoint (mr_mode {:#x}, cq_data {} B, tx size {}, kv guard {} B)",
                info.fabric_attr->prov_name, info.domain_attr->mr_mode, info.domain_attr->cq_data_size,
                info.tx_attr->size, state->sched.kv_guard());
  return std::unique_ptr<endpoint>(new endpoint(std::move(state)));
}

endpoint::endpoint(std::unique_ptr<impl> state) : impl_(std::move(state)) {}
endpoint::~endpoint() = default;

const fabric_options& endpoint::options() const { return impl_->opts; }
std::string endpoint::provider_name() const { return impl_->port.provider_name(); }
address_bytes endpoint::address() const { return impl_->port.address(); }
uint32_t endpoint::connect(const address_bytes& peer) { return impl_->port.connect(peer); }

std::unique_ptr<memory_region> endpoint::register_memory(void* base, uint64_t length) {
  return impl_->port.register_memory(base, length);
}

void endpoint::write(traffic_class tc, const memory_region& src, uint64_t src_offset, uint32_t peer,
                     const remote_region& dst, uint64_t dst_offset, uint64_t length, uint64_t context,
                     std::optional<uint64_t> remote_data) {
  impl_->submit(src, src_offset, dst, dst_offset, make_transfer_request(tc, true, peer, length, context, remote_data));
}

uint32_t endpoint::gather_limit() const { return impl_->gather_limit(); }

void endpoint::write_gather(traffic_class tc, const memory_region& src, const std::vector<gather_piece>& pieces,
                            uint32_t peer, const remote_region& dst, uint64_t dst_offset, uint64_t context) {
  uint64_t total = 0;
  for (const auto& p : pieces) total += p.length;
  impl_->submit(src, pieces.empty() ? 0 : pieces.front().offset, dst, dst_offset,
                make_transfer_request(tc, true, peer, total, context), &pieces);
}

void endpoint::read(traffic_class tc, const memory_region& dst, uint64_t dst_offset, uint32_t peer,
                    const remote_region& src, uint64_t src_offset, uint64_t length, uint64_t context) {
  impl_->submit(dst, dst_offset, src, src_offset, make_transfer_request(tc, false, peer, length, context));
}

std::vector<completion> endpoint::poll_completions() {
  auto& s = *impl_;
  s.loop.drain();
  s.loop.check_timeouts();
  s.sched.schedule();
  s.loop.drain(false);  // what schedule() posted to the provider; arrivals wait for poll_arrivals
  return s.table.take_completions();
}

std::vector<arrival> endpoint::poll_arrivals() {
  impl_->loop.drain();
  return impl_->loop.take_arrivals();
}

bool endpoint::busy() const { return impl_->table.busy(); }

void endpoint::mark_down(uint32_t peer, const std::string& why) {
  impl_->port.mark_down(peer, why);
  // Slices already posted to a dead peer may never complete: fail their transfers now, as the timeout
  // would (a completion arriving later finds no slice and is ignored).
  const auto now = impl_->sched.now();
  for (const auto& o : impl_->table.expired(now, std::chrono::nanoseconds(-1)))
    if (o.peer == peer) impl_->table.fail(o.transfer, why, now);
}

std::optional<std::chrono::nanoseconds> endpoint::poll_delay() { return impl_->sched.poll_delay(); }

transfer_stats endpoint::stats() const {
  const auto& s = *impl_;
  transfer_stats st;
  st.model = s.table.stats(traffic_class::model);
  st.kv = s.table.stats(traffic_class::kv);
  st.arrivals = s.loop.arrivals();
  st.queued_slices = s.sched.queued();
  st.inflight_slices = s.table.inflight_slices();
  st.local_copies = s.port.local_copies();
  return st;
}

}  // namespace dualpath::transport
