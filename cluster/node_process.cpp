// The node process of a multi-process run (`dualpath node`): one node of the cluster, wired to the rest
// through the launcher's registry.
#include <caf/all.hpp>
#include <cstdlib>
#include <caf/io/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <thread>
#include <utility>

#include "protocol/system_config.hpp"
#include "protocol/errors.hpp"
#include "observe/metrics.hpp"
#include "cluster/node_processes.hpp"
#include "transport/call_lock.hpp"
#include "cluster/node_host.hpp"
#include "cluster/node_role.hpp"
#include "cluster/peer_links.hpp"
#include "core/progress.hpp"
#include "core/faults.hpp"
#include "core/status.hpp"
#include "core/stop_signals.hpp"

namespace dualpath::cluster {

namespace {

// docs/design.md §13: lost node h.node is back; this node's engines and copies reach its new process.
uint32_t rejoined(cluster_view& view, runtime::node_io& io, const node_handles& h,
                  std::vector<runtime::endpoint_entry> entries) {
  reset_role(view, h.node);  // §7.9
  view.set_node(h);
  io.node_rejoined(std::move(entries));
  spdlog::info("node {}: node {} rejoined", io.node(), h.node);
  return h.node;
}

// The node's counters and its buffers now, with the SNIC samples given (none: a sample of the buffers).
node_counters counters_of(const runtime::node_io& io, std::vector<runtime::snic_sample> samples) {
  const auto s = io.stats();  // one snapshot, one lock
  node_counters c;
  c.node = io.node();
  c.snic_bytes = s.snic_bytes;
  c.persisted_blocks = s.persisted_blocks;
  c.store_read_bytes = s.store_read_bytes;
  c.snic_write_bytes = s.snic_write_bytes;
  c.snic_samples = std::move(samples);
  c.persist_errors = s.persist_errors;
  c.slots_free = s.slots_free;
  c.slots_total = s.slots_total;
  c.hbm_free = io.hbm_free();
  c.prefill_busy_ns = progress::prefill_busy_ns().load(std::memory_order_relaxed);
  return c;
}

// docs/design.md §7.9: another node changed role (switching: it is in neither while its actors change).
uint32_t role_changed(cluster_view& view, const node_handles& h, uint8_t role) {
  const auto r = actors::node_role(std::min<uint8_t>(role, uint8_t(actors::node_role::switching)));
  view.set_role(h.node, r);
  if (r != actors::node_role::switching) view.set_node(h);
  return h.node;
}

node_control_actor::behavior_type node_control(node_control_actor::pointer self, runtime::node_io* io,
                                               const caf::actor& main, const cluster_view_ptr& view,
                                               std::chrono::milliseconds timeout) {
  return {
      [io](atom::stats) { return encode(counters_of(*io, io->snic_samples())); },
      [io](atom::buffers) { return encode(counters_of(*io, {})); },
      [main](atom::stop) { caf::anon_send(main, atom::stop_v); },
      [io](atom::ping) { return io->node(); },
      [io, view](atom::lost, uint32_t node) {
        io->node_lost(node);
        // The lost process's handles are still in the view (a rejoin replaces them later).
        caf::anon_send(view->traffic_queue(io->node()), atom::lost_v, view->traffic_queue(node).node());
        // A pass fetching from the lost node is not held for those copies' deadline.
        const uint32_t per_node = view->config.engines_per_node;
        for (uint32_t e = io->node() * per_node; e < (io->node() + 1) * per_node; ++e)
          if (auto pe = view->prefill_engine(e)) caf::anon_send(pe, atom::lost_v, node);
      },
      // A node of higher index dials the rejoined one (which dialed those below it) before it answers, so
      // no message reaches it through the launcher first and is then overtaken by a direct one.
      [self, io, view, timeout](atom::rejoin, const node_handles& h,
                                const envelope<schema::FabricDirectory>& e) -> caf::result<uint32_t> {
        if (h.node > io->node() || h.link_port == 0) return rejoined(*view, *io, h, decode(e));
        auto rp = self->make_response_promise<uint32_t>();
        dial_then(self, h, timeout, [rp, io, view, h, entries = decode(e)](status s) mutable {
          if (!s.ok()) spdlog::warn("node {}: {}; its messages go through the launcher", io->node(), s.message());
          rp.deliver(rejoined(*view, *io, h, std::move(entries)));
        });
        return rp;
      },
      // What it holds and its own switch are the main thread's (run_node_process): it waits for its
      // leader's answer and for its old actors to stop, which an actor's handler must not.
      [self, main](atom::held) {
        self->delegate(main, atom::held_v);
        return caf::delegated<uint32_t>{};
      },
      [self, main](atom::role, bool to_prefill) {
        self->delegate(main, atom::role_v, to_prefill);
        return caf::delegated<node_handles>{};
      },
      [view](atom::role, const node_handles& h, uint8_t role) { return role_changed(*view, h, role); },
  };
}

// The registry, retried until it answers: the launcher publishes it before starting any node.
registry_actor connect_registry(caf::actor_system& sys, const std::string& host, uint16_t port,
                                std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (bool told = false;; told = true) {
    auto r = sys.middleman().remote_actor<registry_actor>(host, port);
    if (r) return *r;
    // Said once, when the registry is not there at once (a node started before its launcher, or by hand).
    if (!told)
      fmt::print(stderr, "dualpath: node waiting up to {:.1f} s for the registry at {}:{}\n", timeout.count() / 1000.0,
                 host, port);
    if (std::chrono::steady_clock::now() > deadline)
      throw user_error(fmt::format("node: no registry at {}:{} within {:.1f} s: {}", host, port,
                                   timeout.count() / 1000.0, describe(r.error())));
    if (sleep_unless_stopped(std::chrono::milliseconds(100)))
      throw user_error(fmt::format("node: stopped by signal {} while waiting for the registry at {}:{}",
                                   stop_requested(), host, port));
  }
}

template <class Handle>
void fill(std::vector<Handle>& out, const std::vector<caf::actor>& in) {
  out.clear();
  for (const auto& a : in) out.push_back(caf::actor_cast<Handle>(a));
}

// This node's counters into its metrics endpoint (running totals; the endpoint counts the increments).
void sample_node_metrics(metrics_endpoint& m, const runtime::node_io& io) {
  const auto s = io.stats();
  m.set_snic(io.node(), s.snic_bytes, io.read_q());
  m.set_cnic(io.node(), "kv", "out", s.copy_bytes);
  m.set_unpersisted(io.node(), s.persist_errors);
}

}  // namespace

void run_node_process(const std::string& host, uint16_t port, uint32_t node, std::chrono::milliseconds timeout,
                      const std::string& secret, std::optional<uint16_t> metrics_port, const std::string& host_lock) {
  const std::string where = fmt::format("{}:{}", host, port);
  const std::string proof = secret_proof(secret, secret_purpose::registry);  // docs/design.md §13
  std::unique_ptr<metrics_endpoint> metrics;
  if (metrics_port) {
    metrics = std::make_unique<metrics_endpoint>("127.0.0.1", *metrics_port);
    fmt::print(stderr, "dualpath: node {} metrics on http://127.0.0.1:{}/metrics\n", node, metrics->port());
  }
  // Declared before the actor system: its actors point at them until it has joined them all.
  run_base base;
  std::unique_ptr<runtime::node_io> io;
  system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto registry = connect_registry(sys, host, port, timeout);

  std::string failure, cluster_file, policy;
  // A node restarted at once after a crash may ask before the launcher has found the old process lost
  // (within a second; a hung one within the 2 s heartbeat deadline): while the registry says the index is
  // running, ask again, until `timeout`.
  const auto join_deadline = std::chrono::steady_clock::now() + timeout;
  for (bool told = false;; sleep_unless_stopped(std::chrono::milliseconds(250))) {
    failure.clear();
    self->request(registry, timeout, atom::join_v, node, proof)
        .receive([&](const envelope<schema::NodeSetup>& e) { std::tie(cluster_file, policy) = decode(e); },
                 [&](const caf::error& e) { failure = describe(e); });
    if (failure.find("is running") == std::string::npos || std::chrono::steady_clock::now() > join_deadline ||
        stop_requested())
      break;
    if (!std::exchange(told, true))
      fmt::print(stderr,
                 "dualpath: node {}: the registry at {} says node {} is running; asking again until it is "
                 "found lost (at most {} s)\n",
                 node, where, node, timeout.count() / 1000.0);
  }
  if (stop_requested())
    throw user_error(
        fmt::format("node {}: stopped by signal {} while joining through {}", node, stop_requested(), where));
  if (failure.find("wrong cluster secret") != std::string::npos)
    throw user_error(
        fmt::format("node {}: the registry at {} refused it: wrong cluster secret (give the cluster's "
                    "secret with --secret or {})",
                    node, where, secret_env));
  if (!failure.empty())
    throw user_error(fmt::format("node {}: the registry at {} refused it: {}", node, where, failure));

  const std::string origin = "cluster file from the launcher at " + where;
  const cluster_config config = parse_cluster_config(cluster_file, origin);
  base = prepare_run(config, origin, true);
  auto view = make_view(base, config, run_mode_of(policy), true);
  io = make_node_io(config, base.geometry, node, false, *base.store, nullptr,
                    host_lock.empty() ? nullptr : transport::try_host_call_lock(host_lock, false),
                    transport::host_memory::shared_file);
  node_actors mine = spawn_node_actors(sys, base, view, *io, node, base.first);
  auto control = sys.spawn(node_control, io.get(), caf::actor_cast<caf::actor>(self), view, timeout);
  mine.all.push_back(caf::actor_cast<caf::actor>(control));

  node_handles own;
  own.node = node;
  own.traffic_queue = caf::actor_cast<caf::actor>(mine.traffic_queue);
  own.leader = caf::actor_cast<caf::actor>(mine.leader);
  own.control = caf::actor_cast<caf::actor>(control);
  own.engines = mine.engines;
  // Peers reach this process directly where the registry's host routes from here (cluster/peer_links.hpp).
  auto link_host = local_address_toward(host, port);
  auto link_port = link_host ? open_link(sys, *link_host) : result<uint16_t>(link_host.error());
  if (link_port) {
    own.link_host = *link_host;
    own.link_port = *link_port;
  } else {
    spdlog::warn("node {}: no port for direct links ({}); its messages go through the launcher", node,
                 link_port.error().message());
  }

  std::vector<caf::actor> all = mine.all;  // grows when the node changes role
  auto stop_all = [&] {
    for (auto& a : all) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  };
  cluster_handles cluster;
  std::vector<runtime::endpoint_entry> entries;
  self->request(registry, timeout, atom::wire_v, own, encode(io->entries()), proof)
      .receive(
          [&](const cluster_handles& h, const envelope<schema::FabricDirectory>& d) {
            cluster = h;
            entries = decode(d);
          },
          [&](const caf::error& e) { failure = describe(e); });
  if (!failure.empty()) {
    stop_all();
    throw user_error(fmt::format("node {}: wiring through {} failed: {}", node, where, failure));
  }

  // Everyone's handles into this process's view, then this node's endpoints to every peer.
  view->scheduler = caf::actor_cast<scheduler_actor>(cluster.scheduler);
  fill(view->clients, cluster.clients);
  for (const auto& n : cluster.nodes) view->set_node(n);
  runtime::fabric_directory directory(view->engine_count());
  for (auto& e : entries) directory.at(e.engine) = std::move(e);
  io->connect(directory);
  // Before ready: no message between two nodes travels through the launcher and is then overtaken.
  for (const auto& n : cluster.nodes)
    if (dials_at_wiring(node, n))
      if (auto s = dial(sys, n, timeout); !s.ok())
        spdlog::warn("node {}: {}; its messages go through the launcher", node, s.message());
  caf::anon_send(mine.leader, atom::tick_v);
  self->send(registry, atom::ready_v, node, proof);
  // The node_stop seam: this node process dies at once, the way a crashed server does (no goodbye).
  if (faults::fire(faults::point::node_stop)) std::_Exit(3);
  spdlog::debug("node {}: wired to {} nodes through {}", node, cluster.nodes.size(), where);

  // Host the node until the launcher says stop, or until the launcher is gone.
  self->monitor(registry);
  bool done = false, orphaned = false;
  // The metrics are sampled from the start (every series present, at 0) and then 4 times a second.
  if (metrics) sample_node_metrics(*metrics, *io);
  moved_engines moved;  // adaptive P/D (docs/design.md §7.9)
  auto held = [&]() -> uint32_t { return node_holds_nothing(self, *view, *io, node, moved) ? 0 : 1; };
  auto switch_role = [&](bool to_prefill) -> caf::result<node_handles> {
    if (held() > 0) return make_failure(errc::unavailable, fmt::format("node {} still holds work", node));
    switch_node_role(sys, base, view, *io, node, to_prefill, mine, all, moved);
    node_handles h = handles_of(node, mine);
    h.control = own.control;
    h.link_host = own.link_host;
    h.link_port = own.link_port;
    spdlog::info("node {}: serves as a {} node", node, to_prefill ? "prefill" : "decode");
    return h;
  };
  while (!done && !stop_requested()) {
    self->receive([&](atom::stop) { done = true; }, [&](const caf::down_msg&) { done = orphaned = true; },
                  [&](atom::held) { return held(); },
                  [&](atom::role, bool to_prefill) { return switch_role(to_prefill); },
                  caf::after(std::chrono::milliseconds(250)) >> [] {});
    if (metrics) sample_node_metrics(*metrics, *io);
  }
  stop_all();
  if (orphaned) throw user_error(fmt::format("node {}: the launcher at {} went away", node, where));
}

}  // namespace dualpath::cluster
