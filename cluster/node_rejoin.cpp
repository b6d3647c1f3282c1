// The launcher's side of a node coming back or changing role: a lost node's new process wired into every
// survivor after its quarantine, and a node moved between prefill and decode (docs/design.md §7.9). The
// processes themselves are started, watched and stopped in cluster/node_processes.cpp.
#include <caf/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <optional>
#include <tuple>

#include "cluster/node_processes.hpp"
#include "cluster/node_role.hpp"
#include "core/status.hpp"
#include "protocol/errors.hpp"

namespace dualpath::cluster {

void node_processes::stop_rejoining() {
  drain();
  for (const auto& r : rejoins_) caf::anon_send(caf::actor_cast<node_control_actor>(r.first.control), atom::stop_v);
  rejoins_.clear();
}

std::chrono::milliseconds node_processes::quarantine() const { return 2 * timeout_ + std::chrono::seconds(1); }

std::vector<uint32_t> node_processes::poll_rejoined() {
  drain();
  std::vector<uint32_t> out;
  if (rejoins_.empty()) return out;  // every 200 ms: spawn no actor for nothing
  caf::scoped_actor self{sys_};
  const auto now = std::chrono::steady_clock::now();
  std::vector<rejoin_message> later;
  for (auto& rejoin : rejoins_) {
    const auto& [h, entries] = rejoin;
    const size_t n = h.node;
    if (n >= nodes_.size() || !nodes_[n].lost) continue;
    if (now < nodes_[n].lost_at + quarantine()) {  // a survivor's wait may still name the old process
      later.push_back(std::move(rejoin));          // (one per node: the registry wires one process per lost index)
      continue;
    }
    auto control = caf::actor_cast<node_control_actor>(h.control);
    // The new process first hears which nodes are lost now, and which came back since it was wired (its
    // wiring answer named their dead processes), then every survivor switches to it.
    for (size_t m = 0; m < nodes_.size(); ++m)
      if (nodes_[m].lost && m != n) caf::anon_send(control, atom::lost_v, uint32_t(m));
    // All at once, so a node that died meanwhile (the next poll_lost says so) holds this loop one timeout,
    // not one per node. Not less: the scheduler gives the node work next, and a survivor that has not yet
    // filed its handles would send to the dead process.
    using answer = decltype(self->request(control, timeout_, atom::rejoin_v, h, entries));
    std::vector<std::tuple<size_t, size_t, answer>> asked;  // who, about whom
    for (size_t m = 0; m < nodes_.size(); ++m)
      if (const node_slot& other = nodes_[m]; !other.lost && m != n && other.back_as)
        asked.emplace_back(
            n, m, self->request(control, timeout_, atom::rejoin_v, other.back_as->first, other.back_as->second));
    for (size_t m = 0; m < nodes_.size(); ++m)
      if (!nodes_[m].lost && m != n)
        asked.emplace_back(m, n, self->request(nodes_[m].control, timeout_, atom::rejoin_v, h, entries));
    for (auto& [who, about, a] : asked)
      a.receive([](uint32_t) {},
                [&, who = who, about = about](const caf::error& e) {
                  spdlog::warn("launcher: node {} did not take rejoined node {}: {}", who, about, describe(e));
                });
    // Nodes that changed role since the start: the new process has their first actors and the cluster
    // file's roles (and the rejoins above reset them), so it hears their actors and roles now (§7.9).
    for (size_t m = 0; m < nodes_.size(); ++m)
      if (const node_slot& other = nodes_[m]; !other.lost && m != n && other.moved) {
        self->request(control, timeout_, atom::role_v, other.moved->first, uint8_t(other.moved->second))
            .receive([](uint32_t) {},
                     [&](const caf::error& e) {
                       spdlog::warn("launcher: rejoined node {} did not take node {}'s role: {}", n, m, describe(e));
                     });
      }
    node_slot& s = nodes_[n];
    s.control = control;
    (*watcher_)->monitor(s.control);
    s.lost = s.stopped = false;
    s.back_as = rejoin;
    s.moved.reset();  // its new process serves in the cluster file's role
    out.push_back(uint32_t(n));
  }
  rejoins_ = std::move(later);
  return out;
}

bool node_processes::holds_nothing(uint32_t node) {
  if (node >= nodes_.size() || nodes_[node].lost || !nodes_[node].control) return false;
  caf::scoped_actor self{sys_};
  std::optional<uint32_t> held;
  self->request(nodes_[node].control, std::chrono::milliseconds(500), atom::held_v)
      .receive([&](uint32_t n) { held = n; }, [](const caf::error&) {});
  return held && *held == 0;
}

status node_processes::tell_role(const node_handles& h, uint8_t role) {
  caf::scoped_actor self{sys_};
  std::string failure;
  for (size_t m = 0; m < nodes_.size(); ++m) {
    if (m == h.node || nodes_[m].lost || !nodes_[m].control) continue;
    self->request(nodes_[m].control, timeout_, atom::role_v, h, role)
        .receive([](uint32_t) {},
                 [&, m](const caf::error& e) {
                   if (failure.empty())
                     failure = fmt::format("node {} did not take node {}'s role: {}", m, h.node, describe(e));
                 });
  }
  return failure.empty() ? status{} : status(errc::unavailable, failure);
}

result<node_handles> node_processes::switch_role(uint32_t node, bool to_prefill) {
  if (node >= nodes_.size() || nodes_[node].lost || !nodes_[node].control)
    return status(errc::unavailable, fmt::format("node {} is not running", node));
  node_handles leaving;
  leaving.node = node;
  if (auto s = tell_role(leaving, uint8_t(actors::node_role::switching)); !s) return s;
  caf::scoped_actor self{sys_};
  std::optional<node_handles> fresh;
  std::string failure;
  self->request(nodes_[node].control, 2 * timeout_, atom::role_v, to_prefill)
      .receive([&](const node_handles& h) { fresh = h; }, [&](const caf::error& e) { failure = describe(e); });
  if (!fresh) return status(errc::unavailable, fmt::format("node {} did not change role: {}", node, failure));
  const auto role = serving_role(to_prefill);
  if (auto s = tell_role(*fresh, uint8_t(role)); !s) return s;
  nodes_[node].moved.emplace(*fresh, role);
  return *fresh;
}

}  // namespace dualpath::cluster
