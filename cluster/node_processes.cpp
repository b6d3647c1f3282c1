// The launcher's side of a multi-process run: the node processes it starts and watches (the registry they
// join is cluster/registry.cpp).
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <thread>
#include <tuple>

#include "cluster/control_client.hpp"
#include "protocol/errors.hpp"
#include "cluster/node_processes.hpp"
#include "cluster/registry.hpp"
#include "core/status.hpp"
#include "core/stop_signals.hpp"

extern char** environ;

namespace dualpath::actors {

namespace {

std::string describe_exit(uint32_t node, int pid, int status) {
  if (WIFSIGNALED(status)) return fmt::format("node {} (pid {}) was killed by signal {}", node, pid, WTERMSIG(status));
  return fmt::format("node {} (pid {}) exited with status {}", node, pid, WEXITSTATUS(status));
}

}  // namespace

node_processes::node_processes(caf::actor_system& sys, const cluster_view& view, const node_launch& launch)
    : sys_(sys), timeout_(int64_t(view.config.timeout_s * 1000)) {
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
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
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
        failure = fmt::format("the nodes were not all up within {} s (never joined: {})", timeout_.count() / 1000.0,
                              missing.empty() ? "none" : missing);
      }
    }
    if (!failure.empty()) throw user_error("multi-process run: " + failure);
    for (const auto& n : wired.nodes) {
      controls_.push_back(caf::actor_cast<node_control_actor>(n.control));
      (*watcher_)->monitor(controls_.back());
    }
    stopped_.assign(controls_.size(), false);
    lost_.assign(controls_.size(), false);
    lost_at_.assign(controls_.size(), {});
    back_as_.assign(controls_.size(), std::nullopt);
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
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  for (uint32_t n = 0; n < nodes; ++n) {
    const std::string node = std::to_string(n), timeout_ms = std::to_string(timeout_.count());
    std::vector<std::string> args{program,  "node", "--registry",   registry_at,
                                  "--node", node,   "--timeout-ms", timeout_ms};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (const int err = posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(), envp.data()); err != 0)
      throw user_error(fmt::format("cannot start node {} as '{}': {}", n, program, std::strerror(err)));
    pids_.push_back(pid);
    reaped_.push_back(false);
  }
}

// Stops what is still running: asks every wired node to stop, gives spawned processes a grace period,
// then kills and reaps them; closes the registry.
void node_processes::shutdown() {
  for (auto& c : controls_) caf::anon_send(c, atom::stop_v);
  // Spawned nodes not wired yet have no control actor to hear a stop: they get SIGTERM, which they handle
  // themselves (core/stop_signals.hpp).
  if (controls_.empty())
    for (size_t i = 0; i < pids_.size(); ++i)
      if (!reaped_[i]) kill(pids_[i], SIGTERM);
  if (watcher_) stop_rejoining();
  reap_until(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  for (size_t i = 0; i < pids_.size(); ++i)
    if (!reaped_[i]) {
      kill(pids_[i], SIGKILL);
      waitpid(pids_[i], nullptr, 0);
      reaped_[i] = true;
    }
  if (registry_) {
    if (port_) sys_.middleman().unpublish(registry_, port_);
    caf::anon_send_exit(registry_, caf::exit_reason::user_shutdown);
    registry_ = nullptr;
  }
}

std::vector<std::pair<size_t, int>> node_processes::reap_until(std::chrono::steady_clock::time_point deadline) {
  std::vector<std::pair<size_t, int>> ended;
  for (;;) {
    bool running = false;
    for (size_t i = 0; i < pids_.size(); ++i) {
      if (reaped_[i]) continue;
      int status = 0;
      if (waitpid(pids_[i], &status, WNOHANG) == pids_[i]) {
        reaped_[i] = true;
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
  for (size_t n = 0; n < controls_.size(); ++n)
    if (controls_[n].address() == d.source && !stopped_[n]) {
      stopped_[n] = true;
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
    return status(errc::unavailable, describe_exit(uint32_t(ended[0].first), pids_[ended[0].first], ended[0].second));
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
    if (n >= lost_.size() || lost_[n]) return;
    lost_[n] = stopped_[n] = true;
    lost_at_[n] = std::chrono::steady_clock::now();
    out.emplace_back(uint32_t(n), std::move(how));
  };
  for (const auto& [n, status] : reap_until(std::chrono::steady_clock::now()))
    lose(n, describe_exit(uint32_t(n), pids_[n], status));
  drain();
  for (const auto& d : downs_)
    for (size_t n = 0; n < controls_.size(); ++n)
      if (controls_[n].address() == d.source) lose(n, fmt::format("node {} went away ({})", n, describe(d.reason)));
  downs_.clear();
  // The heartbeat: a node whose process runs but whose actors do not answer is as good as dead.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ping_ < heartbeat_interval) return out;
  last_ping_ = now;
  caf::scoped_actor self{sys_};
  for (size_t n = 0; n < controls_.size(); ++n) {
    if (lost_[n]) continue;
    std::string failure;
    self->request(controls_[n], heartbeat_deadline, atom::ping_v)
        .receive([](uint32_t) {}, [&](const caf::error& e) { failure = describe(e); });
    if (failure.empty()) continue;
    if (n < pids_.size() && !reaped_[n]) {  // a hung process of ours must not come back with late answers
      kill(pids_[n], SIGKILL);
      waitpid(pids_[n], nullptr, 0);
      reaped_[n] = true;
    }
    lose(n,
         fmt::format("node {} did not answer the heartbeat within {} ms ({})", n, heartbeat_deadline.count(), failure));
  }
  return out;
}

void node_processes::announce_lost(uint32_t node) {
  for (size_t n = 0; n < controls_.size(); ++n)
    if (!lost_[n]) caf::anon_send(controls_[n], atom::lost_v, node);
  caf::anon_send(caf::actor_cast<registry_actor>(registry_), atom::lost_v, node, proof_);  // it may join again
}

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
    if (n >= controls_.size() || !lost_[n]) continue;
    if (now < lost_at_[n] + quarantine()) {  // a survivor's wait may still name the old process
      later.push_back(std::move(rejoin));    // (one per node: the registry wires one process per lost index)
      continue;
    }
    auto control = caf::actor_cast<node_control_actor>(h.control);
    // The new process first hears which nodes are lost now, and which came back since it was wired (its
    // wiring answer named their dead processes), then every survivor switches to it.
    for (size_t m = 0; m < controls_.size(); ++m)
      if (lost_[m] && m != n) caf::anon_send(control, atom::lost_v, uint32_t(m));
    // All at once, so a node that died meanwhile (the next poll_lost says so) holds this loop one timeout,
    // not one per node. Not less: the scheduler gives the node work next, and a survivor that has not yet
    // filed its handles would send to the dead process.
    using answer = decltype(self->request(controls_[0], timeout_, atom::rejoin_v, h, entries));
    std::vector<std::tuple<size_t, size_t, answer>> asked;  // who, about whom
    for (size_t m = 0; m < controls_.size(); ++m)
      if (!lost_[m] && m != n && back_as_[m])
        asked.emplace_back(n, m,
                           self->request(control, timeout_, atom::rejoin_v, back_as_[m]->first, back_as_[m]->second));
    for (size_t m = 0; m < controls_.size(); ++m)
      if (!lost_[m] && m != n)
        asked.emplace_back(m, n, self->request(controls_[m], timeout_, atom::rejoin_v, h, entries));
    for (auto& [who, about, a] : asked)
      a.receive([](uint32_t) {},
                [&, who = who, about = about](const caf::error& e) {
                  spdlog::warn("launcher: node {} did not take rejoined node {}: {}", who, about, describe(e));
                });
    controls_[n] = control;
    (*watcher_)->monitor(controls_[n]);
    lost_[n] = stopped_[n] = false;
    back_as_[n] = rejoin;
    out.push_back(uint32_t(n));
  }
  rejoins_ = std::move(later);
  return out;
}

std::vector<node_counters> node_processes::stats() {
  caf::scoped_actor self{sys_};
  std::vector<node_counters> out;
  for (size_t n = 0; n < controls_.size(); ++n) {
    if (n < lost_.size() && lost_[n]) {  // a lost node's counters went with it
      out.push_back(node_counters{uint32_t(n)});
      continue;
    }
    std::string failure;
    self->request(controls_[n], timeout_, atom::stats_v)
        .receive([&](const envelope<schema::NodeCounters>& e) { out.push_back(decode(e)); },
                 [&](const caf::error& e) { failure = describe(e); });
    if (!failure.empty()) throw user_error(fmt::format("node {} did not report its counters: {}", n, failure));
  }
  return out;
}

void node_processes::stop() {
  for (size_t n = 0; n < controls_.size(); ++n)
    if (!(n < lost_.size() && lost_[n])) caf::anon_send(controls_[n], atom::stop_v);
  stop_rejoining();
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  // Spawned processes must exit cleanly; every node's control actor must go down.
  for (const auto& [i, status] : reap_until(deadline))
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
      throw user_error("multi-process run: at the end, " + describe_exit(uint32_t(i), pids_[i], status));
  for (size_t i = 0; i < pids_.size(); ++i)
    if (!reaped_[i]) throw user_error(fmt::format("node {} (pid {}) did not exit after stop", i, pids_[i]));
  for (const auto& d : downs_) note_down(d);  // taken by stop_rejoining's drain
  downs_.clear();
  while (std::count(stopped_.begin(), stopped_.end(), false) > 0) {
    bool timed_out = false;
    (*watcher_)->receive(
        [&](const caf::down_msg& d) { note_down(d); },
        [](atom::rejoin, const node_handles& h, const envelope<schema::FabricDirectory>&) {
          caf::anon_send(caf::actor_cast<node_control_actor>(h.control), atom::stop_v);
        },
        caf::after(std::chrono::milliseconds(100)) >> [&] { timed_out = std::chrono::steady_clock::now() > deadline; });
    if (timed_out) throw user_error("multi-process run: a node did not stop within the timeout");
  }
  controls_.clear();  // nothing left to stop
}

}  // namespace dualpath::actors
