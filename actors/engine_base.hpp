#pragma once
// What the prefill and decode engine states share: their setup, the lookups they make, failing a turn, and
// the deadlines of their requests.
#include <caf/send.hpp>
#include <caf/timespan.hpp>
#include <spdlog/spdlog.h>

#include <chrono>

#include "actors/request_watch.hpp"
#include "actors/vocabulary.hpp"
#include "actors/engines.hpp"
#include "protocol/errors.hpp"
#include "protocol/waits.hpp"
#include "protocol/runtime_codec.hpp"
#include "runtime/kv_plan.hpp"

namespace dualpath::actors {

struct engine_base {
  engine_setup setup;
  gpu::hbm_arena* hbm = nullptr;
  // The deadlines of its requests to the traffic queue, the compute worker and the EP group
  // (actors/request_watch.hpp).
  request_watch watch;

  void bind(engine_setup st) {
    setup = std::move(st);
    hbm = &setup.node->hbm(setup.engine);
  }
  const cluster_view& view() const { return *setup.view; }
  const kv_geometry& geo() const { return setup.view->geometry; }
  const runtime::slot_layout& slots() const { return view().slots; }
  uint32_t node() const { return view().node_of(setup.engine); }
  // Tells the agent client that its turn failed, and why (the run reports it; nothing waits forever).
  template <class Self>
  void answer_failure(Self* self, const turn_payload& p, const std::string& why,
                      failure_kind kind = failure_kind::fatal) {
    spdlog::error("engine {}: request {:x}: {}", setup.engine, p.request, why);
    self->send(view().clients.at(p.agent), atom::result_v, encode(failed_turn(p, why, kind)));
  }
  // A failed KV transfer (an error completion on the fabric) is transient: the client re-runs the turn
  // (docs/design.md §13); every other failure is the turn's answer.
  static failure_kind kind_of(const caf::error& e) {
    return to_status(e).code() == errc::transfer ? failure_kind::transient : failure_kind::fatal;
  }
  // A streamed turn's tokens [first, ...) to its client as they are made (docs/design.md §18).
  template <class Self>
  void stream_tokens(Self* self, const turn_payload& p, uint32_t first, std::vector<int32_t> tokens, uint32_t valid) {
    if (!p.stream) return;
    self->send(view().clients.at(p.agent), atom::tokens_v,
               encode(turn_tokens{p.request, first, std::move(tokens), valid}));
  }
  // A batch of copies from node `n`'s CNICs; `f` gets the bytes moved, `e` the first error, on this actor's
  // thread within the data-plane wait. The engine's own node takes it straight from here (node_services,
  // watched as a local job), another node through its traffic queue.
  template <class Self, class F, class E>
  void copy_from(Self* self, uint32_t n, copy_batch batch, F f, E e) {
    if (n != node()) {
      watch.request(self, view().traffic_queue(n), data_plane_timeout(), atom::copy_v, encode(batch))
          .then(std::move(f), std::move(e));
      return;
    }
    uint64_t bytes = 0;
    for (const auto& op : batch.ops) bytes += op.length;
    watch
        .local(self, data_plane_timeout(),
               [&](local_answer answer) {
                 setup.node->copy(std::move(batch.ops), batch.traffic, [answer, bytes](status s) {
                   if (s.ok()) answer.deliver(bytes);
                   else answer.deliver(to_error(s));
                 });
               })
        .then(std::move(f), std::move(e));
  }
  caf::timespan timeout() const { return waits_of(view().config).request(); }
  caf::timespan data_plane_timeout() const { return waits_of(view().config).data_plane(); }
  caf::timespan compute_timeout(double expected_s) const { return waits_of(view().config).compute(expected_s); }
};

}  // namespace dualpath::actors
