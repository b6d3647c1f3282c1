#pragma once
// The node registry of a multi-process run (docs/design.md §13): node processes join it with the cluster's
// secret, get the run's cluster file and policy, register their actor handles and CNIC endpoints, and get
// everyone else's once all have; later a lost node's index may join again (a rejoin).
#include <caf/fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "cluster/vocabulary.hpp"
#include "core/secret.hpp"
#include "protocol/interfaces.hpp"

namespace dualpath::cluster {

// `launcher` hears (join, N) as nodes join, (ready, cluster_handles) once every node is connected, and
// (rejoin, handles, endpoints) for a lost node that joined again. Every message must carry `proof`
// (secret_proof(secret, registry)); refusals are counted in `refused`.
registry_actor spawn_registry(caf::actor_system& sys, uint32_t nodes, std::string cluster_file, std::string policy,
                              cluster_handles handles, caf::actor launcher, std::string proof,
                              std::shared_ptr<refused_peers> refused);

}  // namespace dualpath::cluster
