// docs/design.md §13: a lost node rejoins. Nodes are started by hand against the launcher's registry, as an
// operator would; one is SIGKILLed mid-run and `dualpath node --node N` is started again for its index. The new
// process is wired to every survivor, takes work again, and every turn is answered once and equals a full
// recompute. A process that tries to join as a node that is still running is refused, naming why.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "cluster/cluster.hpp"
#include "runtime_fixtures.hpp"
#include "tests/cluster/hand_nodes.hpp"

using namespace runtime_fixtures;  // with dualpath, dualpath::cluster and fs

namespace {

constexpr uint32_t agents = 8, nodes = 4;
const std::string secret = "rejoin-test-secret";

// 2P2D, nodes joined by hand, every turn verified; agents think `tool_ms` between turns, so the run outlasts
// the quarantines of its rejoins.
run_options two_by_two(const fs::path& dir, uint32_t turns, uint32_t tool_ms) {
  auto o = two_by_two_processes(dir, agents, turns, 4);  // a rejoin waits 2 timeout_s + 1 s out
  o.config.secret = secret;
  o.node_registry = "127.0.0.1:0";
  for (auto& s : o.scripts) {
    s.replay_tool_time = true;
    for (auto& t : s.turns) t.tool_ms = tool_ms;
  }
  return o;
}

// Starts the nodes by hand, kills victims when told, and starts a lost node again `restart_after_s` after
// the launcher noticed it. Remembers what each rejoined node held afterwards (it must take work again).
struct churn {
  std::string registry;
  std::vector<int> pids;    // the running process of each node
  std::vector<int> killed;  // processes killed (reaped when restarted)
  double restart_after_s = 0.3;
  std::vector<std::pair<uint32_t, clock_type::time_point>> to_restart;
  std::vector<uint32_t> lost, rejoined;
  std::vector<double> rejoin_s;  // per rejoin: from the loss to the switch to the new process
  std::vector<clock_type::time_point> lost_at = std::vector<clock_type::time_point>(nodes);
  std::vector<bool> back = std::vector<bool>(nodes, false);
  std::vector<uint32_t> held_after_rejoin = std::vector<uint32_t>(nodes, 0);  // most requests seen on its engines

  void arm(run_options& o) {
    o.on_registry = [this](const std::string& at) {
      registry = at;
      for (uint32_t n = 0; n < nodes; ++n) pids.push_back(hand_nodes::start_node(at, n, 10000, secret));
    };
    o.on_node_lost = [this](uint32_t node, const std::string&) {
      lost.push_back(node);
      lost_at[node] = clock_type::now();
      back[node] = false;
      to_restart.emplace_back(node, clock_type::now() + std::chrono::milliseconds(int(restart_after_s * 1000)));
    };
    o.on_node_rejoined = [this](uint32_t node) {
      rejoined.push_back(node);
      back[node] = true;
      rejoin_s.push_back(std::chrono::duration<double>(clock_type::now() - lost_at[node]).count());
    };
  }

  // Called at every progress report: restarts what is due and watches the rejoined nodes' load.
  void on_progress(const run_progress& p) {
    const auto now = clock_type::now();
    for (auto it = to_restart.begin(); it != to_restart.end();) {
      if (it->second > now) {
        ++it;
        continue;
      }
      const uint32_t n = it->first;
      pids[n] = hand_nodes::start_node(registry, n, 10000, secret);
      it = to_restart.erase(it);
    }
    for (uint32_t n = 0; n < nodes && n < p.engine_requests_by_node.size(); ++n)
      if (back[n]) held_after_rejoin[n] = std::max(held_after_rejoin[n], p.engine_requests_by_node[n]);
  }

  bool all_up() const { return to_restart.empty() && lost.size() == rejoined.size(); }

  void kill_node(uint32_t n) {
    kill(pids[n], SIGKILL);
    killed.push_back(pids[n]);
    pids[n] = -1;
  }

  // Every node still running exits cleanly after the run; the killed ones are reaped.
  void check_exits() {
    for (int pid : pids) {
      REQUIRE(pid > 0);  // no node left waiting for its restart
      CHECK(hand_nodes::exit_status(pid, 10) == 0);
    }
    for (int pid : killed) waitpid(pid, nullptr, 0);
  }
};

}  // namespace

TEST_CASE("node rejoin: a SIGKILLed decode node started again as the same index takes work; all verified") {
  test::scratch_dir dir;
  const uint32_t turns = 12;
  auto o = two_by_two(dir.path, turns, 1500);
  churn c;
  c.arm(o);
  const uint32_t victim = 3;
  bool fired = false;
  int duplicate = -1;
  const fs::path duplicate_log = dir.path / "duplicate-node-0.log";
  o.on_progress = [&](const run_progress& p) {
    c.on_progress(p);
    // A second process for a node that is running is refused by the registry.
    if (duplicate < 0) duplicate = hand_nodes::start_node(c.registry, 0, 3000, secret, {}, duplicate_log.string());
    const bool busy = victim < p.engine_requests_by_node.size() && p.engine_requests_by_node[victim] > 0;
    if (!fired && p.turns_done >= 6 && busy) {
      fired = true;
      c.kill_node(victim);
    }
  };
  const auto s = run_cluster(o);
  REQUIRE(fired);
  c.check_exits();
  check_turns_right(s, agents * turns, agents * turns);  // none lost, none twice, every one recomputed
  CHECK(s.lost_nodes == 1);
  CHECK(s.rejoined_nodes == 1);
  REQUIRE(c.rejoined == std::vector<uint32_t>{victim});
  CHECK(c.held_after_rejoin[victim] > 0);  // its engines decoded turns again
  // Not before the quarantine ends; how long after depends on the machine's load (reported below).
  CHECK(c.rejoin_s[0] >= 2 * o.config.timeout_s + 1);

  REQUIRE(duplicate > 0);
  CHECK(hand_nodes::exit_status(duplicate, 10) == 2);
  const auto refused = test::slurp(duplicate_log);
  CHECK(refused.find("says node 0 is running; asking again") != std::string::npos);  // for its 3 s timeout
  CHECK(refused.find("node 0 is running: only a lost node can join a running cluster") != std::string::npos);
  MESSAGE("node ", victim, " killed and restarted: switched to ", c.rejoin_s[0], " s after its loss, then held up to ",
          c.held_after_rejoin[victim], " requests; ", s.migrated_turns, " turns re-run; JCT ", s.jct_s,
          " s; a duplicate node 0: ", refused);
}

// Issue 14 item 4: nodes killed and restarted repeatedly (seeded victims and moments); every turn verified.
TEST_CASE("chaos: nodes of a 2P2D run SIGKILLed and restarted three times; every turn verified, none lost") {
  const uint64_t seed = 7;
  std::mt19937_64 rng(seed);
  test::scratch_dir dir;
  const uint32_t turns = 18;
  auto o = two_by_two(dir.path, turns, 2000);
  churn c;
  c.arm(o);
  // Three kills, each once the previous victim is back and at least this many turns are answered.
  std::vector<uint64_t> at;
  std::vector<uint32_t> victims;
  for (uint64_t base : {4u, 40u, 80u}) {
    at.push_back(base + rng() % 10);
    victims.push_back(uint32_t(rng() % nodes));
  }
  c.restart_after_s = 0.2 + double(rng() % 800) / 1000.0;
  size_t next = 0;
  o.on_progress = [&](const run_progress& p) {
    c.on_progress(p);
    if (next < at.size() && c.all_up() && p.turns_done >= at[next]) c.kill_node(victims[next++]);
  };
  const auto s = run_cluster(o);
  c.check_exits();
  REQUIRE(next == at.size());
  check_turns_right(s, agents * turns, agents * turns);
  CHECK(s.lost_nodes == 3);
  CHECK(s.rejoined_nodes == 3);
  CHECK(c.lost == victims);
  CHECK(c.rejoined == victims);
  MESSAGE("seed ", seed, ": killed nodes ", victims[0], ", ", victims[1], ", ", victims[2], " after ", at[0], "+, ",
          at[1], "+, ", at[2], "+ turns, each restarted ", c.restart_after_s, " s after its loss; ", s.migrated_turns,
          " turns re-run; JCT ", s.jct_s, " s");
}
