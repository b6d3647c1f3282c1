// The launcher's side of a multi-process run: the node processes it starts and watches (the registry they
// join is cluster/registry.cpp).
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <thread>

#include "cluster/control_client.hpp"
#include "protocol/errors.hpp"
#include "protocol/waits.hpp"
#include "cluster/node_processes.hpp"
#include "cluster/registry.hpp"
#include "core/status.hpp"
#include "core/stop_signals.hpp"
#include "transport/call_lock.hpp"

extern char** environ;

namespace dualpath::cluster {

namespace {

std::string describe_exit(uint32_t node, int pid, int status) {
  if (WIFSIGNALED(status)) return fmt::format("node {} (pid {}) was killed by signal {}", node, pid, WTERMSIG(status));
  return fmt::format("node {} (pid {}) exited with status {}", node, pid, WEXITSTATUS(status));
}

}  // namespace

node_processes::node_processes(caf::actor_system& sys, const cluster_view& view, const node_launch& launch)
    : sys_(sys),
      timeout_(int64_t(view.config.timeout_s * 1000)),
      startup_(std::chrono::duration_cast<std::chrono::milliseconds>(waits_of(view.config).startup())),
      nodes_(view.nodes()) {
  const uint32_t nodes = view.nodes();
  cluster_handles handles;
  handles.scheduler = caf::actor_cast<caf::actor>(view.scheduler);
  for (const auto& c : view.clients) handles.clients.push_back(caf::actor_cast<caf::actor>(c));
  watcher_ = std::make_unique<caf::scoped_actor>(sys);
  auto& self = *watcher_;  // hears the registry: joins, the cluster once ready, rejoins later
  proof_ = secret_proof(launch.secret, secret_purpose::registry);
  // format_cluster_config leaves the secret out: the cluster file travels, the secret does not.
  auto reg = spawn_registry(sys, nodes, format_cluster_config(view.config), view.mode.name(), handles,
                            caf::actor_cast<caf::actor>(self), proof_, launch.refused);
  registry_ = caf::actor_cast<caf::actor>(reg);

  std::string host = "127.0.0.1";
  uint16_t want = 0;
  if (!launch.listen.empty()) std::tie(host, want) = parse_host_port(launch.listen, "--node-registry", true);
  auto port = sys.middleman().publish(reg, want, host.c_str());
  if (!port) {
    shutdown();
    throw user_error(fmt::format("cannot publish the node registry on {}:{}: {}", host, want, describe(port.error())));
  }
  port_ = *port;
  const std::string registry_at = fmt::format("{}:{}", host, port_);
  try {
    if (launch.listen.empty()) spawn_nodes(launch.program, registry_at, nodes, launch.secret);
    else if (launch.on_registry) launch.on_registry(registry_at);

    // Wait until every node is wired and connected, watching the processes meanwhile.
    const auto deadline = std::chrono::steady_clock::now() + startup_;
    std::vector<bool> joined(nodes, false);
    std::string failure;
    bool ready = false;
    cluster_handles wired;
    while (!ready && failure.empty()) {
      bool quiet = false;
      self->receive([&](atom::ready, const cluster_handles& h) { ready = true, wired = h; },
                    [&](atom::join, uint32_t node) { joined.at(node) = true; },
                    caf::after(std::chrono::milliseconds(100)) >> [&] { quiet = true; });
      if (!quiet) continue;
      failure = check().message();  // receives on the watcher too: never from inside its handlers
      if (failure.empty() && stop_requested()) failure = fmt::format("stopped by signal {}", stop_requested());
      if (failure.empty() && std::chrono::steady_clock::now() > deadline) {
        std::string missing;
        for (uint32_t n = 0; n < nodes; ++n)
          if (!joined[n]) missing += (missing.empty() ? "" : ", ") + std::to_string(n);
        failure = fmt::format("the nodes were not all up within {} s (never joined: {})", startup_.count() / 1000.0,
                              missing.empty() ? "none" : missing);
      }
    }
    if (!failure.empty()) throw user_error("multi-process run: " + failure);
    for (size_t n = 0; n < wired.nodes.size() && n < nodes_.size(); ++n) {
      nodes_[n].control = caf::actor_cast<node_control_actor>(wired.nodes[n].control);
      (*watcher_)->monitor(nodes_[n].control);
    }
    wired_ = true;
  } catch (...) {
    shutdown();
    throw;
  }
}

void node_processes::spawn_nodes(const std::string& program, const std::string& registry_at, uint32_t nodes,
                                 const std::string& secret) {
  // The children's environment: ours, with DUALPATH_SECRET set to the cluster's (not visible in `ps`).
  const std::string prefix = std::string(secret_env) + "=";
  std::vector<std::string> env_text{prefix + secret};
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) env_text.emplace_back(*e);
  std::vector<char*> envp;
  envp.reserve(env_text.size() + 1);
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  // Its nodes share this host: their shm provider calls take one host-wide lock, as embedded nodes take one
  // in-process lock, so that none spins on a spin lock another's preempted thread holds (docs/design.md §13).
  // Only a speed-up: where no shared memory can be made (a container without /dev/shm) they run without it.
  host_lock_ = host_call_lock_name(getpid());
  if (!transport::try_host_call_lock(host_lock_, true)) host_lock_.clear();
  for (uint32_t n = 0; n < nodes; ++n) {
    const std::string node = std::to_string(n), timeout_ms = std::to_string(startup_.count());
    std::vector<std::string> args{program,  "node", "--registry",   registry_at,
                                  "--node", node,   "--timeout-ms", timeout_ms};
    if (!host_lock_.empty()) args.insert(args.end(), {"--host-lock", host_lock_});
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (const int err = posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(), envp.data()); err != 0)
      throw user_error(fmt::format("cannot start node {} as '{}': {}", n, program, std::strerror(err)));
    nodes_[n].pid = pid;
  }
}

// Stops what is still running: asks every wired node to stop, gives spawned processes a grace period,
// then kills and reaps them; closes the registry.
void node_processes::shutdown() {
  for (auto& s : nodes_)
    if (s.control) caf::anon_send(s.control, atom::stop_v);
  // Spawned nodes not wired yet have no control actor to hear a stop: they get SIGTERM, which they handle
  // themselves (core/stop_signals.hpp).
  if (!wired_)
    for (auto& s : nodes_)
      if (s.running_child()) kill(s.pid, SIGTERM);
  if (watcher_) stop_rejoining();
  reap_until(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  for (auto& s : nodes_)
    if (s.running_child()) {
      kill(s.pid, SIGKILL);
      waitpid(s.pid, nullptr, 0);
      s.reaped = true;
    }
  if (registry_) {
    if (port_) sys_.middleman().unpublish(registry_, port_);
    caf::anon_send_exit(registry_, caf::exit_reason::user_shutdown);
    registry_ = nullptr;
  }
  // Here, not in the destructor: a constructor that throws (a stop signal while nodes join) runs only this.
  if (!host_lock_.empty()) transport::remove_host_call_lock(host_lock_);
  host_lock_.clear();
}

std::vector<std::pair<size_t, int>> node_processes::reap_until(std::chrono::steady_clock::time_point deadline) {
  std::vector<std::pair<size_t, int>> ended;
  for (;;) {
    bool running = false;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      node_slot& s = nodes_[i];
      if (!s.running_child()) continue;
      int status = 0;
      if (waitpid(s.pid, &status, WNOHANG) == s.pid) {
        s.reaped = true;
        ended.emplace_back(i, status);
      } else {
        running = true;
      }
    }
    if (!running || std::chrono::steady_clock::now() >= deadline) return ended;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::optional<size_t> node_processes::note_down(const caf::down_msg& d) {
  for (size_t n = 0; n < nodes_.size(); ++n)
    if (nodes_[n].control && nodes_[n].control.address() == d.source && !nodes_[n].stopped) {
      nodes_[n].stopped = true;
      return n;
    }
  return std::nullopt;
}

node_processes::~node_processes() { shutdown(); }

void node_processes::drain() {
  for (bool more = true; more;) {
    more = false;
    (*watcher_)->receive([&](const caf::down_msg& d) { more = true, downs_.push_back(d); },
                         [&](atom::rejoin, const node_handles& h, const envelope<schema::FabricDirectory>& e) {
                           more = true, rejoins_.emplace_back(h, e);
                           spdlog::info(
                               "launcher: node {} joined again; it takes work once its quarantine ends ({} ms "
                               "after its loss)",
                               h.node, quarantine().count());
                         },
                         caf::after(std::chrono::seconds(0)) >> [] {});
  }
}

status node_processes::check() {
  const auto ended = reap_until(std::chrono::steady_clock::now());
  if (!ended.empty())
    return status(errc::unavailable,
                  describe_exit(uint32_t(ended[0].first), nodes_[ended[0].first].pid, ended[0].second));
  // Nodes on other hosts (or not yet reaped): their control actor's down message says they are gone.
  drain();
  std::string gone;
  for (const auto& d : downs_)
    if (auto n = note_down(d); n && gone.empty()) gone = fmt::format("node {} went away ({})", *n, describe(d.reason));
  downs_.clear();
  if (gone.empty()) return {};
  return status(errc::unavailable, gone);
}

std::vector<std::pair<uint32_t, std::string>> node_processes::poll_lost() {
  std::vector<std::pair<uint32_t, std::string>> out;
  auto lose = [&](size_t n, std::string how) {
    if (n >= nodes_.size() || nodes_[n].lost) return;
    nodes_[n].lost = nodes_[n].stopped = true;
    nodes_[n].lost_at = std::chrono::steady_clock::now();
    out.emplace_back(uint32_t(n), std::move(how));
  };
  for (const auto& [n, status] : reap_until(std::chrono::steady_clock::now()))
    lose(n, describe_exit(uint32_t(n), nodes_[n].pid, status));
  drain();
  for (const auto& d : downs_)
    for (size_t n = 0; n < nodes_.size(); ++n)
      if (nodes_[n].control && nodes_[n].control.address() == d.source)
        lose(n, fmt::format("node {} went away ({})", n, describe(d.reason)));
  downs_.clear();
  // The heartbeat: a node whose process runs but whose actors do not answer is as good as dead.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ping_ < heartbeat_interval) return out;
  last_ping_ = now;
  caf::scoped_actor self{sys_};
  for (size_t n = 0; n < nodes_.size(); ++n) {
    node_slot& s = nodes_[n];
    if (s.lost || !s.control) continue;
    std::string failure;
    self->request(s.control, heartbeat_deadline, atom::ping_v)
        .receive([](uint32_t) {}, [&](const caf::error& e) { failure = describe(e); });
    if (failure.empty()) continue;
    if (s.running_child()) {
      // A process that died while its ping waited (on a loaded machine a killed process can outlast one pass
      // of the reaper above) is named by how it ended, not as a hang.
      int status = 0;
      if (waitpid(s.pid, &status, WNOHANG) == s.pid) {
        s.reaped = true;
        lose(n, describe_exit(uint32_t(n), s.pid, status));
        continue;
      }
      kill(s.pid, SIGKILL);  // a hung process of ours must not come back with late answers
      waitpid(s.pid, nullptr, 0);
      s.reaped = true;
    }
    lose(n, fmt::format("node {}{} did not answer the heartbeat within {} ms ({})", n,
                        s.pid ? fmt::format(" (pid {})", s.pid) : std::string(), heartbeat_deadline.count(), failure));
  }
  return out;
}

void node_processes::announce_lost(uint32_t node) {
  for (auto& s : nodes_)
    if (!s.lost && s.control) caf::anon_send(s.control, atom::lost_v, node);
  caf::anon_send(caf::actor_cast<registry_actor>(registry_), atom::lost_v, node, proof_);  // it may join again
}

std::vector<int> node_processes::pids() const {
  std::vector<int> out;
  for (const auto& s : nodes_)
    if (s.pid) out.push_back(s.pid);
  return out;
}

result<std::vector<node_counters>> node_processes::stats() { return ask_counters(atom::stats_v, true); }

result<std::vector<node_counters>> node_processes::buffers() { return ask_counters(atom::buffers_v, false); }

template <class Atom>
result<std::vector<node_counters>> node_processes::ask_counters(Atom what, bool with_lost) {
  caf::scoped_actor self{sys_};
  std::vector<node_counters> out;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (nodes_[n].lost || !nodes_[n].control) {  // a lost node's counters went with it
      if (!with_lost) continue;
      node_counters none;
      none.node = uint32_t(n);
      out.push_back(none);
      continue;
    }
    std::string failure;
    self->request(nodes_[n].control, timeout_, what)
        .receive([&](const envelope<schema::NodeCounters>& e) { out.push_back(decode(e)); },
                 [&](const caf::error& e) { failure = describe(e); });
    if (!failure.empty())
      return status(errc::unavailable, fmt::format("node {} did not report its counters: {}", n, failure));
  }
  return out;
}

status node_processes::stop() {
  for (auto& s : nodes_)
    if (!s.lost && s.control) caf::anon_send(s.control, atom::stop_v);
  stop_rejoining();
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  // Spawned processes must exit cleanly; every node's control actor must go down.
  for (const auto& [i, status] : reap_until(deadline))
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
      return dualpath::status(errc::unavailable,
                              "multi-process run: at the end, " + describe_exit(uint32_t(i), nodes_[i].pid, status));
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].running_child())
      return status(errc::unavailable, fmt::format("node {} (pid {}) did not exit after stop", i, nodes_[i].pid));
  for (const auto& d : downs_) note_down(d);  // taken by stop_rejoining's drain
  downs_.clear();
  auto running = [&] {
    return std::any_of(nodes_.begin(), nodes_.end(), [](const node_slot& s) { return s.control && !s.stopped; });
  };
  while (running()) {
    bool timed_out = false;
    (*watcher_)->receive(
        [&](const caf::down_msg& d) { note_down(d); },
        [](atom::rejoin, const node_handles& h, const envelope<schema::FabricDirectory>&) {
          caf::anon_send(caf::actor_cast<node_control_actor>(h.control), atom::stop_v);
        },
        caf::after(std::chrono::milliseconds(100)) >> [&] { timed_out = std::chrono::steady_clock::now() > deadline; });
    if (timed_out) return status(errc::unavailable, "multi-process run: a node did not stop within the timeout");
  }
  for (auto& s : nodes_) s.control = node_control_actor{};  // nothing left to stop
  return {};
}

}  // namespace dualpath::cluster
