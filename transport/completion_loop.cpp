#include "transport/completion_loop.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "transport/fabric.hpp"
#include "core/faults.hpp"
#include "transport/scheduler.hpp"
#include "transport/transfer_table.hpp"

namespace dualpath::transport {

completion_loop::completion_loop(const fabric_options& opts, fabric_port& port, transfer_table& table, scheduler& sched)
    : opts_(opts), port_(port), table_(table), sched_(sched) {}

completion_loop::~completion_loop() {
  if (orphan_errors_ > 1) {
    spdlog::warn("transport: {} error completions without context on '{}' in all", orphan_errors_, opts_.provider);
  }
}

void completion_loop::drain(bool provider) {
  port_.reap_copied([this](uint64_t id) { finished(id); });
  if (!provider && port_.posted() == 0) return;
  constexpr int batch = 64;
  fi_cq_data_entry entries[batch];
  for (;;) {
    ssize_t n;
    fi_cq_err_entry err{};
    {
      // Released before the completions are handled: they may post again (fabric_options::provider_lock).
      const auto serial = port_.hold_own_region();
      n = fi_cq_read(port_.cq(), entries, batch);
      if (n == -FI_EAVAIL && fi_cq_readerr(port_.cq(), &err, 0) != 1) return;
    }
    if (n == -FI_EAGAIN) return;
    if (n == -FI_EAVAIL) {
      char buf[256] = {};
      const char* prov = fi_cq_strerror(port_.cq(), err.prov_errno, err.err_data, buf, sizeof(buf));
      const std::string why = fmt::format("{} ({})", fi_strerror(err.err), prov ? prov : "");
      if (!err.op_context) {
        if (orphan_errors_++ == 0) {
          spdlog::warn("transport: error completion without context on '{}': {} (further ones are only counted)",
                       opts_.provider, why);
        }
        continue;
      }
      on_error(port_.release(err.op_context), err.err, why);
      continue;
    }
    if (n < 0) {
      spdlog::error("transport: fi_cq_read on '{}': {}", opts_.provider, fabric_error("fi_cq_read", n));
      return;
    }
    for (ssize_t i = 0; i < n; ++i) {
      const auto& e = entries[i];
      if (e.flags & FI_REMOTE_CQ_DATA) {
        arrived_.push_back(arrival{e.data, e.len});
        arrivals_++;
        continue;
      }
      if (e.op_context) finished(port_.release(e.op_context));
    }
    if (n < batch) return;
  }
}

void completion_loop::finished(uint64_t slice_id) {
  if (!table_.find_slice(slice_id)) return;  // its transfer failed already
  if (faults::fire(faults::point::fabric_completion)) {
    on_error(
        slice_id, FI_EIO,
        fmt::format("{} [injected fault: {}]", fi_strerror(FI_EIO), faults::name(faults::point::fabric_completion)));
    return;
  }
  sched_.completed(slice_id);
}

void completion_loop::on_error(uint64_t slice_id, int err, const std::string& why) {
  const slice* s = table_.find_slice(slice_id);
  if (!s) return;  // abandoned when its transfer failed: nothing waits for it
  const std::string what =
      fmt::format("{} {} bytes to peer {}: {}", s->is_write ? "write of" : "read of", s->length, s->peer, why);
  if (is_connection_error(err)) port_.mark_down(s->peer, what);
  table_.fail(s->transfer, what, sched_.now());
}

void completion_loop::check_timeouts() {
  const auto now = sched_.now();
  for (const auto& o : table_.expired(now, opts_.timeout)) {
    const std::string why =
        fmt::format("no completion from peer {} within {} ms (peer gone?)", o.peer, opts_.timeout.count());
    port_.mark_down(o.peer, why);
    table_.fail(o.transfer, why, now);
  }
}

std::vector<arrival> completion_loop::take_arrivals() {
  std::vector<arrival> out;
  out.swap(arrived_);
  return out;
}

}  // namespace dualpath::transport
