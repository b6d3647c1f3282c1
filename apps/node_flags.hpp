#pragma once
// The flags of a command that runs one process per node (docs/design.md §13): `run` and `serve`. The nodes are
// spawned by the command (--processes) or started by hand at its registry (--node-registry).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace dualpath::cli {

struct node_flags {
  bool processes = false;
  std::string registry;  // HOST:PORT the registry is published on (port 0: any free port)

  bool any() const { return processes || !registry.empty(); }
  // The program each node process runs when this process spawns them (this executable); "" when started by hand.
  std::string program() const {
    return processes && registry.empty() ? std::filesystem::read_symlink("/proc/self/exe").string() : "";
  }
};

// `launcher`: what starts the nodes, for the help text ("this launcher", "the server").
inline void add_node_flags(CLI::App* cmd, node_flags& f, const std::string& launcher) {
  cmd->add_flag("--processes", f.processes,
                "One process per node (`dualpath node`), started and wired by " + launcher + "; not for oracle");
  cmd->add_option("--node-registry", f.registry,
                  "One process per node, started by hand (any host): publish the registry on HOST:PORT (0: any "
                  "free port, printed) and wait for the nodes to join");
}

// The line that tells an operator where to start the `nodes` node processes.
inline std::string registry_notice(const std::string& at, uint32_t nodes) {
  return fmt::format(
      "node registry at {}: start `dualpath node --registry {} --node N` for N = 0..{} (with the cluster secret "
      "in DUALPATH_SECRET)",
      at, at, nodes - 1);
}

}  // namespace dualpath::cli
