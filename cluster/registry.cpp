// The registry actor (cluster/registry.hpp).
#include "cluster/registry.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <vector>

#include "protocol/deployment_codec.hpp"
#include "protocol/errors.hpp"

namespace dualpath::cluster {

namespace {

using wiring_promise = caf::typed_response_promise<cluster_handles, envelope<schema::FabricDirectory>>;

struct registry_state {
  static inline const char* name = "registry";
  std::string cluster_file, policy;
  std::string proof;                       // secret_proof(secret, registry): what every message must carry
  std::shared_ptr<refused_peers> refused;  // messages without it (docs/design.md §13)
  caf::actor launcher;  // gets (join, N), (ready, cluster_handles) once every node is connected, then (rejoin, ...)
  cluster_handles handles;
  std::vector<bool> registered;
  std::vector<std::vector<runtime::endpoint_entry>> entries;  // per node: its endpoints as last registered
  std::vector<wiring_promise> waiting;
  uint32_t ready = 0;
  bool wired = false;           // every node got the cluster: from now on only a lost node may join again
  std::vector<bool> lost;       // the launcher said so: a new process may take this index
  std::vector<bool> rejoining;  // wired again, its ready not yet seen

  uint32_t nodes() const { return uint32_t(registered.size()); }

  std::string refuse(uint32_t node) const {
    if (node >= nodes()) return fmt::format("node {} is not in this cluster ({} nodes)", node, nodes());
    if (wired && !lost[node])
      return fmt::format("node {} is running: only a lost node can join a running cluster", node);
    return "";
  }

  envelope<schema::FabricDirectory> directory() const {
    std::vector<runtime::endpoint_entry> all;
    for (const auto& n : entries) all.insert(all.end(), n.begin(), n.end());
    return encode(all);
  }

  // Node `h.node` registered; once all have, every waiting node gets the whole cluster. A node that
  // rejoins gets it at once, as it is now (docs/design.md §13).
  void add(const node_handles& h, std::vector<runtime::endpoint_entry> node_entries, wiring_promise promise) {
    registered[h.node] = true;
    handles.nodes[h.node] = h;
    entries[h.node] = std::move(node_entries);
    if (wired) {
      lost[h.node] = false;
      rejoining[h.node] = true;
      promise.deliver(handles, directory());
      return;
    }
    waiting.push_back(std::move(promise));
    if (std::count(registered.begin(), registered.end(), true) < int(nodes())) return;
    wired = true;
    const auto all = directory();
    for (auto& p : waiting) p.deliver(handles, all);
    waiting.clear();
  }

  void on_ready(uint32_t node) {
    if (node >= nodes()) return;
    if (rejoining[node]) {
      rejoining[node] = false;
      caf::anon_send(launcher, atom::rejoin_v, handles.nodes[node], encode(entries[node]));
    } else if (++ready == nodes()) {
      caf::anon_send(launcher, atom::ready_v, handles);
    }
  }
};

// Ok, or the error a message without the cluster's secret gets; logged (never the proof) and counted.
caf::error admit(registry_actor::stateful_pointer<registry_state> self, const std::string& proof, const char* what,
                 uint32_t node) {
  if (proof_matches(self->state.proof, proof)) return {};
  const auto n = ++self->state.refused->joins;
  const auto sender = self->current_sender();
  spdlog::warn("node registry: refused '{}' for node {} from {}: wrong cluster secret ({} refused so far)", what, node,
               sender ? caf::to_string(sender->node()) : std::string("an anonymous peer"), n);
  return make_failure(errc::bad_input, "wrong cluster secret");
}

registry_actor::behavior_type registry(registry_actor::stateful_pointer<registry_state> self, uint32_t nodes,
                                       std::string cluster_file, std::string policy, cluster_handles handles,
                                       caf::actor launcher, std::string proof, std::shared_ptr<refused_peers> refused) {
  auto& st = self->state;
  st.proof = std::move(proof);
  st.refused = std::move(refused);
  st.cluster_file = std::move(cluster_file);
  st.policy = std::move(policy);
  st.launcher = std::move(launcher);
  st.handles = std::move(handles);
  st.handles.nodes.resize(nodes);
  st.registered.assign(nodes, false);
  st.entries.resize(nodes);
  st.lost.assign(nodes, false);
  st.rejoining.assign(nodes, false);
  return {
      [self](atom::join, uint32_t node, const std::string& proof) -> caf::result<envelope<schema::NodeSetup>> {
        if (auto e = admit(self, proof, "join", node)) return e;
        if (auto why = self->state.refuse(node); !why.empty()) {
          spdlog::warn("node registry: refused a join as node {}: {}", node, why);
          return make_failure(errc::bad_input, why);
        }
        if (!self->state.wired) caf::anon_send(self->state.launcher, atom::join_v, node);  // start-up progress
        return encode_setup(self->state.cluster_file, self->state.policy);
      },
      [self](atom::wire, const node_handles& h, const envelope<schema::FabricDirectory>& e,
             const std::string& proof) -> wiring_promise {
        auto promise = self->make_response_promise<cluster_handles, envelope<schema::FabricDirectory>>();
        if (auto err = admit(self, proof, "wire", h.node)) {
          promise.deliver(std::move(err));
          return promise;
        }
        std::string why = self->state.refuse(h.node);
        if (why.empty() && self->state.registered[h.node]) why = fmt::format("node {} registered twice", h.node);
        if (!why.empty()) promise.deliver(make_failure(errc::bad_input, why));
        else self->state.add(h, decode(e), promise);
        return promise;
      },
      [self](atom::ready, uint32_t node, const std::string& proof) {
        if (admit(self, proof, "ready", node)) return;
        self->state.on_ready(node);
      },
      [self](atom::lost, uint32_t node, const std::string& proof) {
        if (admit(self, proof, "lost", node) || node >= self->state.nodes()) return;
        self->state.lost[node] = true;
        self->state.registered[node] = false;
        self->state.rejoining[node] = false;
      },
  };
}

}  // namespace

registry_actor spawn_registry(caf::actor_system& sys, uint32_t nodes, std::string cluster_file, std::string policy,
                              cluster_handles handles, caf::actor launcher, std::string proof,
                              std::shared_ptr<refused_peers> refused) {
  return sys.spawn(registry, nodes, std::move(cluster_file), std::move(policy), std::move(handles), std::move(launcher),
                   std::move(proof), std::move(refused));
}

}  // namespace dualpath::cluster
