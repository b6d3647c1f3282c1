// The launcher's side of a multi-process run: the registry actor and the node processes it starts.
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "actors/deployment.hpp"
#include "core/errors.hpp"

extern char** environ;

namespace dualpath::actors {

namespace {

using wiring_promise = caf::typed_response_promise<cluster_handles, envelope<schema::FabricDirectory>>;

struct registry_state {
  static inline const char* name = "registry";
  std::string cluster_file, policy;
  caf::actor launcher;  // gets (ready, cluster_handles) once every node is connected
  cluster_handles handles;
  std::vector<bool> registered;
  std::vector<runtime::endpoint_entry> entries;
  std::vector<wiring_promise> waiting;
  uint32_t ready = 0;

  uint32_t nodes() const { return uint32_t(registered.size()); }

  std::string refuse(uint32_t node) const {
    if (node >= nodes()) return fmt::format("node {} is not in this cluster ({} nodes)", node, nodes());
    return "";
  }

  // Node `h.node` registered; once all have, every waiting node gets the whole cluster.
  void add(const node_handles& h, std::vector<runtime::endpoint_entry> node_entries, wiring_promise promise) {
    registered[h.node] = true;
    handles.nodes[h.node] = h;
    for (auto& e : node_entries) entries.push_back(std::move(e));
    waiting.push_back(std::move(promise));
    if (std::count(registered.begin(), registered.end(), true) < int(nodes())) return;
    const auto directory = encode(entries);
    for (auto& p : waiting) p.deliver(handles, directory);
    waiting.clear();
  }
};

registry_actor::behavior_type registry(registry_actor::stateful_pointer<registry_state> self, uint32_t nodes,
                                       std::string cluster_file, std::string policy, cluster_handles handles,
                                       caf::actor launcher) {
  auto& st = self->state;
  st.cluster_file = std::move(cluster_file);
  st.policy = std::move(policy);
  st.launcher = std::move(launcher);
  st.handles = std::move(handles);
  st.handles.nodes.resize(nodes);
  st.registered.assign(nodes, false);
  return {
      [self](atom::join, uint32_t node) -> caf::result<envelope<schema::NodeSetup>> {
        if (auto why = self->state.refuse(node); !why.empty()) return caf::make_error(caf::sec::invalid_argument, why);
        return encode_setup(self->state.cluster_file, self->state.policy);
      },
      [self](atom::wire, const node_handles& h, const envelope<schema::FabricDirectory>& e) -> wiring_promise {
        auto promise = self->make_response_promise<cluster_handles, envelope<schema::FabricDirectory>>();
        std::string why = self->state.refuse(h.node);
        if (why.empty() && self->state.registered[h.node]) why = fmt::format("node {} registered twice", h.node);
        if (!why.empty()) promise.deliver(caf::make_error(caf::sec::invalid_argument, why));
        else self->state.add(h, decode(e), promise);
        return promise;
      },
      [self](atom::ready, uint32_t) {
        if (++self->state.ready == self->state.nodes())
          caf::anon_send(self->state.launcher, atom::ready_v, self->state.handles);
      },
  };
}

std::string describe_exit(uint32_t node, int pid, int status) {
  if (WIFSIGNALED(status)) return fmt::format("node {} (pid {}) was killed by signal {}", node, pid, WTERMSIG(status));
  return fmt::format("node {} (pid {}) exited with status {}", node, pid, WEXITSTATUS(status));
}

}  // namespace

node_processes::node_processes(caf::actor_system& sys, const cluster_view& view, const std::string& program)
    : sys_(sys), timeout_(int64_t(view.config.timeout_s * 1000)) {
  const uint32_t nodes = view.nodes();
  cluster_handles handles;
  handles.scheduler = caf::actor_cast<caf::actor>(view.scheduler);
  for (const auto& c : view.clients) handles.clients.push_back(caf::actor_cast<caf::actor>(c));
  caf::scoped_actor self{sys};
  auto reg = sys.spawn(registry, nodes, format_cluster_config(view.config), view.policy, handles,
                       caf::actor_cast<caf::actor>(self));
  registry_ = caf::actor_cast<caf::actor>(reg);
  auto port = sys.middleman().publish(reg, 0, "127.0.0.1");
  if (!port) throw user_error("cannot publish the node registry: " + sys.render(port.error()));

  const std::string registry_at = fmt::format("127.0.0.1:{}", *port);
  for (uint32_t n = 0; n < nodes; ++n) {
    const std::string node = std::to_string(n), timeout_ms = std::to_string(timeout_.count());
    std::vector<std::string> args{program, "node", "--registry", registry_at, "--node", node, "--timeout-ms", timeout_ms};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (const int err = posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(), environ); err != 0) {
      throw user_error(fmt::format("cannot start node {} as '{}': {}", n, program, std::strerror(err)));
    }
    pids_.push_back(pid);
    reaped_.push_back(false);
  }

  // Wait until every node is wired and connected, watching the processes meanwhile.
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::string failure;
  bool ready = false;
  cluster_handles wired;
  while (!ready && failure.empty()) {
    self->receive([&](atom::ready, const cluster_handles& h) { ready = true, wired = h; },
                  caf::after(std::chrono::milliseconds(100)) >> [&] {
                    failure = check();
                    if (failure.empty() && std::chrono::steady_clock::now() > deadline)
                      failure = fmt::format("the node processes did not start within {} s", timeout_.count() / 1000.0);
                  });
  }
  if (!failure.empty()) throw user_error("multi-process run: " + failure);
  for (const auto& n : wired.nodes) controls_.push_back(caf::actor_cast<node_control_actor>(n.control));
}

node_processes::~node_processes() {
  bool running = false;
  for (size_t i = 0; i < pids_.size(); ++i) running = running || !reaped_[i];
  if (running) {
    for (auto& c : controls_) caf::anon_send(c, atom::stop_v);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      bool any = false;
      for (size_t i = 0; i < pids_.size(); ++i) {
        if (reaped_[i]) continue;
        int status = 0;
        if (waitpid(pids_[i], &status, WNOHANG) == pids_[i]) reaped_[i] = true;
        else any = true;
      }
      if (!any) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (size_t i = 0; i < pids_.size(); ++i)
      if (!reaped_[i]) {
        kill(pids_[i], SIGKILL);
        waitpid(pids_[i], nullptr, 0);
        reaped_[i] = true;
      }
  }
  caf::anon_send_exit(registry_, caf::exit_reason::user_shutdown);
}

std::string node_processes::check() {
  for (size_t i = 0; i < pids_.size(); ++i) {
    if (reaped_[i]) continue;
    int status = 0;
    if (waitpid(pids_[i], &status, WNOHANG) == pids_[i]) {
      reaped_[i] = true;
      return describe_exit(uint32_t(i), pids_[i], status);
    }
  }
  return "";
}

std::vector<node_counters> node_processes::stats() {
  caf::scoped_actor self{sys_};
  std::vector<node_counters> out;
  for (size_t n = 0; n < controls_.size(); ++n) {
    std::string failure;
    self->request(controls_[n], timeout_, atom::stats_v)
        .receive([&](const envelope<schema::NodeStats>& e) { out.push_back(decode(e)); },
                 [&](const caf::error& e) { failure = sys_.render(e); });
    if (!failure.empty()) throw user_error(fmt::format("node {} did not report its counters: {}", n, failure));
  }
  return out;
}

void node_processes::stop() {
  for (auto& c : controls_) caf::anon_send(c, atom::stop_v);
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (size_t i = 0; i < pids_.size(); ++i) {
    while (!reaped_[i]) {
      int status = 0;
      if (waitpid(pids_[i], &status, WNOHANG) == pids_[i]) {
        reaped_[i] = true;
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
          throw user_error("multi-process run: at the end, " + describe_exit(uint32_t(i), pids_[i], status));
      } else if (std::chrono::steady_clock::now() > deadline) {
        throw user_error(fmt::format("node {} (pid {}) did not exit after stop", i, pids_[i]));
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
}

}  // namespace dualpath::actors
