#include "cluster/node_events.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>

#include "protocol/errors.hpp"
#include "protocol/waits.hpp"

namespace dualpath::cluster {

std::string without_nodes(const cluster_view& view, const std::vector<std::pair<uint32_t, std::string>>& lost) {
  // Roles as they are now: with adaptive P/D (docs/design.md §7.9) they need not be the cluster file's.
  uint32_t prefill_lost = 0, prefill_nodes = 0;
  for (const auto& l : lost) prefill_lost += view.is_prefill_node(l.first) ? 1 : 0;
  for (uint32_t n = 0; n < view.nodes(); ++n) prefill_nodes += view.is_prefill_node(n) ? 1 : 0;
  const bool no_prefill = prefill_lost == prefill_nodes;
  const bool no_decode = lost.size() - prefill_lost == view.nodes() - prefill_nodes;
  if (!no_prefill && !no_decode) return "";
  std::string names;
  for (const auto& l : lost) names += (names.empty() ? "" : "; ") + l.second;
  return fmt::format("no {} engine remains (lost: {})", no_prefill ? "prefill" : "decode", names);
}

status tell_lost(caf::scoped_actor& self, const cluster_view& view, uint32_t node, uint32_t losses) {
  std::vector<uint64_t> turns;
  status out;
  self->request(view.scheduler, waits_of(view.config).request(), atom::lost_v, node)
      .receive([&](const std::vector<uint64_t>& t) { turns = t; },
               [&](const caf::error& e) {
                 out = status(errc::unavailable,
                              "the scheduler did not drop node " + std::to_string(node) + ": " + describe(e));
               });
  // Those turns are re-run by their clients. Survivors holding their earlier attempts (a DE reservation, a load
  // or a hand-off from the lost node) would wait out the data plane's deadline on them, holding buffer slots
  // and HBM the re-runs need: they drop them now (docs/design.md §13).
  for (uint32_t e = 0; e < view.engine_count(); ++e) {
    if (view.node_of(e) == node) continue;
    const auto pe = view.prefill_engine(e);
    const auto de = view.decode_engine(e);
    for (uint64_t id : turns) {
      if (pe) caf::anon_send(pe, atom::cancel_v, id);
      if (de) caf::anon_send(de, atom::cancel_v, id);
    }
  }
  for (const auto& client : view.clients) caf::anon_send(client, atom::lost_v, losses, turns);
  return out;
}

status tell_rejoined(caf::scoped_actor& self, const cluster_view& view, uint32_t node) {
  status out;
  self->request(view.scheduler, waits_of(view.config).request(), atom::rejoin_v, node)
      .receive([](uint32_t) {},
               [&](const caf::error& e) {
                 out = status(errc::unavailable,
                              "the scheduler did not take node " + std::to_string(node) + " back: " + describe(e));
               });
  return out;
}

}  // namespace dualpath::cluster
