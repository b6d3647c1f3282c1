#pragma once
// One process per node (docs/design.md §13). The launcher keeps the scheduler and the agent clients, publishes a
// registry on a local port and starts `dualpath node --registry HOST:PORT --node N` for every node. Each
// node process joins the registry, gets the run's cluster file and policy, builds its node (data plane,
// traffic queue, engines, leader), registers its actor handles and CNIC endpoints, and gets back everyone
// else's. Nodes then share nothing but CAF messages (the middleman), the fabric and the store directory.
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/vocabulary.hpp"
#include "actors/cluster_view.hpp"
#include "core/secret.hpp"
#include "runtime/node_io.hpp"
#include "protocol/deployment_codec.hpp"
#include "protocol/interfaces.hpp"

namespace dualpath::cluster {

// How the launcher gets its node processes: it starts them on this host (spawn), or it publishes the
// registry at `listen` and waits for nodes started by hand, on any host (join).
struct node_launch {
  std::string program;  // spawn: the dualpath executable, started as `program node ...` once per node
  std::string listen;   // join: HOST:PORT to publish the registry on (port 0: any free port)
  std::function<void(const std::string& registry)> on_registry;  // join: where nodes must connect
  // The cluster's secret (docs/design.md §13): nodes prove it in every registry message; spawned nodes get it
  // as DUALPATH_SECRET in their environment, never on their command line. Refused messages are counted here.
  std::string secret;
  std::shared_ptr<refused_peers> refused = std::make_shared<refused_peers>();
};

// The launcher's side: starts (or waits for) and watches the node processes of one run.
class node_processes {
 public:
  // Publishes a registry for `view` (its scheduler and clients must be set), gets a process for every
  // node, and returns once all are wired and connected. user_error if a node process ends or start-up
  // takes longer than the configured timeout (naming the nodes that never joined).
  node_processes(caf::actor_system& sys, const cluster_view& view, const node_launch& launch);
  ~node_processes();  // stops node processes still running (spawned ones: SIGKILL after a grace period)
  node_processes(const node_processes&) = delete;
  node_processes& operator=(const node_processes&) = delete;

  // Ok while every node process runs; otherwise (unavailable) which one ended, and how.
  status check();
  // docs/design.md §13: the nodes lost since the previous call, each with how (a process that ended, a
  // control actor gone down, or, at most every heartbeat interval, one that did not answer a ping within
  // the heartbeat deadline: a spawned one is then killed). A lost node is left out of stats() and stop().
  std::vector<std::pair<uint32_t, std::string>> poll_lost();
  // Tells every node still running that `node` is lost (their copies to it fail at once), and the registry
  // that a new process may join as `node`.
  void announce_lost(uint32_t node);
  // docs/design.md §13: the lost nodes that joined again (`dualpath node --node N` started anew) and whose
  // quarantine has ended. Each is told which nodes are still lost, every survivor is pointed at its new
  // actors and endpoints (waiting for each to take them), and it is watched again; the caller tells the
  // scheduler. A new process is wired at once but switched to only a quarantine after the loss.
  std::vector<uint32_t> poll_rejoined();
  // How long after its loss a node's index stays with the dead process: every wait of a survivor that can
  // name it (2 timeout_s at most, actors/engine_base.hpp) has ended by then, so no late copy, release or
  // hand-off planned for the dead process reaches the new one, whose slots and HBM mean other things.
  std::chrono::milliseconds quarantine() const;
  // Adaptive P/D across node processes (docs/design.md §7.9). Whether drained node `node` holds nothing now
  // (false too when it does not answer within 500 ms).
  bool holds_nothing(uint32_t node);
  // Drained node `node` changes role in its process: every other node first files it as switching (none
  // names it as an all-to-all peer), then it switches, then every node files its new actors in the new role.
  // Its new handles, or unavailable naming the node that did not answer.
  result<node_handles> switch_role(uint32_t node, bool to_prefill);
  // Counters of every node (unavailable, naming it, if one does not answer within the timeout).
  result<std::vector<node_counters>> stats();
  // Every running node's free buffer slots and HBM now (counters without SNIC samples); lost nodes left out.
  result<std::vector<node_counters>> buffers();
  // Asks every node to stop and waits until they have (unavailable, naming the node, if one does not, or a
  // spawned process exits other than cleanly).
  status stop();
  std::vector<int> pids() const;  // spawned node processes, by node (empty when nodes were started by hand)

 private:
  void spawn_nodes(const std::string& program, const std::string& registry_at, uint32_t nodes,
                   const std::string& secret);
  void shutdown();
  // Asks every node's control actor `what` (stats or buffers); a lost node's entry is empty or left out.
  template <class Atom>
  result<std::vector<node_counters>> ask_counters(Atom what, bool with_lost);
  // Reaps spawned node processes that ended, polling until all have or `deadline`: (node, wait status).
  std::vector<std::pair<size_t, int>> reap_until(std::chrono::steady_clock::time_point deadline);
  // Marks the node whose control actor this down message is about; its index unless already marked.
  std::optional<size_t> note_down(const caf::down_msg& d);
  // Takes what the watcher was sent: down messages into downs_, the registry's rejoins into rejoins_.
  void drain();
  // Nodes wired again but still in quarantine are not watched yet: they are told to stop with the rest.
  void stop_rejoining();
  // Tells every running node but `node` that `node` is now in role `role` with actors `h` (§7.9).
  status tell_role(const node_handles& h, uint8_t role);

  // What the registry says of a node that joined again: its new process's handles and endpoints.
  using rejoin_message = std::pair<node_handles, envelope<schema::FabricDirectory>>;

  // What the launcher knows of one node's process.
  struct node_slot {
    int pid = 0;                                      // spawned: its process (0: started by hand)
    bool reaped = false;                              // spawned: its wait status was collected
    node_control_actor control;                       // once wired: the control actor of its current process
    bool stopped = false;                             // that control actor is gone (down message seen)
    bool lost = false;                                // given up until it rejoins (poll_lost, poll_rejoined)
    std::chrono::steady_clock::time_point lost_at{};  // when poll_lost gave it up
    // Once it rejoined: its process's handles and endpoints, for a node that rejoins after it.
    std::optional<rejoin_message> back_as;
    // Once it changed role (§7.9): its actors and role now, for a node that rejoins after.
    std::optional<std::pair<node_handles, actors::node_role>> moved;
    bool running_child() const { return pid != 0 && !reaped; }
  };

  caf::actor_system& sys_;
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds startup_;  // protocol::waits::startup(): nodes joining and being wired
  std::vector<node_slot> nodes_;       // by node index
  bool wired_ = false;                 // every node's control actor is known
  std::chrono::steady_clock::time_point last_ping_{};
  // A dead process is seen at once (reaped, or its control actor's down message); a hung one by the
  // heartbeat: pinged every interval, lost when it does not answer within the deadline.
  static constexpr std::chrono::milliseconds heartbeat_interval{500}, heartbeat_deadline{2000};
  std::unique_ptr<caf::scoped_actor> watcher_;  // monitors every node's control actor
  std::vector<caf::down_msg> downs_;
  std::vector<rejoin_message> rejoins_;
  caf::actor registry_;
  std::string proof_;  // the registry's: the launcher's own messages to it carry it too
  uint16_t port_ = 0;
  // The host-wide lock of the node processes it spawned (transport/call_lock.hpp); removed at the end.
  std::string host_lock_;
};

// The host-wide lock the launcher of process `launcher_pid` makes for its node processes (a POSIX shared memory
// name, transport/call_lock.hpp).
inline std::string host_call_lock_name(int launcher_pid) { return "/dualpath-calls-" + std::to_string(launcher_pid); }

// The node process's side (`dualpath node`): joins the registry at host:port as node `node`, hosts that
// node until the launcher says stop, then returns. user_error when the registry cannot be reached or
// stops answering (every wait is bounded by `timeout`).
// `secret` is the cluster's (core/secret.hpp); a registry that refuses it ends the process with user_error.
// With `metrics_port`, it serves its own node's Prometheus metrics on 127.0.0.1 (0: any free port, printed):
// its SNIC, CNIC and write-back counters, updated 4 times a second (docs/design.md §15).
// With `host_lock` (the launcher's, transport/call_lock.hpp), its shm provider calls take that host-wide lock,
// as the embedded nodes take one in-process lock (docs/design.md §13).
void run_node_process(const std::string& host, uint16_t port, uint32_t node, std::chrono::milliseconds timeout,
                      const std::string& secret, std::optional<uint16_t> metrics_port = std::nullopt,
                      const std::string& host_lock = "");

}  // namespace dualpath::cluster
