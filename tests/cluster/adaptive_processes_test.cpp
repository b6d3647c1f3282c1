// Adaptive P/D across node processes (docs/design.md §7.9, §13): the moving node switches in its own process,
// every other process files it as switching and then its new actors in its new role, and the launcher's
// planner reads the prefill engines' busy time from the node processes' counters. Real processes, real
// sockets; every turn matches a full recompute.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/cluster/adaptive_fixtures.hpp"
#include "tests/cluster/hand_nodes.hpp"

using namespace adaptive_fixtures;

TEST_CASE("adaptive P/D across node processes: a decode node moves to prefill, every turn verified") {
  test::scratch_dir dir;
  const auto s = run_adaptive(prefill_heavy(dir.path), prefill_heavy_agents(), true);
  check_turns_right(s, prefill_heavy_total, prefill_heavy_total);
  check_move(s, true, 2);
  CHECK(s.lost_nodes == 0);
}

TEST_CASE("adaptive P/D across node processes: a prefill node moves to decode beside an all-to-all peer") {
  test::scratch_dir dir;
  // The decode engines' all-to-all (decode_heavy): the other processes must name the new peer.
  const auto s = run_adaptive(decode_heavy(dir.path), decode_heavy_agents(), true);
  check_turns_right(s, decode_heavy_total, decode_heavy_total);
  check_move(s, false, 1);
  CHECK(s.lost_nodes == 0);
}

// A node that moved is lost, and joins again (docs/design.md §7.9, §13): it comes back in the cluster file's
// role, every survivor and the launcher file it so again, and it takes work in that role. Nodes are started by
// hand against the registry, as the rejoin tests do; the moved node is SIGKILLed while it prefills.
TEST_CASE("adaptive P/D across node processes: a moved node is lost and rejoins in its cluster-file role") {
  test::scratch_dir dir;
  const std::string secret = "adaptive-rejoin-secret";
  cluster_config c = prefill_heavy(dir.path);
  c.provider = "tcp";
  c.timeout_s = 4;  // a rejoin waits out 2 timeout_s + 1 s of quarantine
  c.secret = secret;
  // The first 12 turns of each agent come back to back, which moves a decode node to prefill early; the rest
  // think 700 ms between turns, so the run outlasts the quarantine and the node takes work after it. That the
  // moved node works, before its kill and after its rejoin, is judged by the turns the scheduler places there
  // (a placement stands until the agent's next turn, 700 ms or more), not only by the requests its engines
  // hold: a prefill or a 40-token answer takes tens of milliseconds, between two progress samples. Every turn
  // after the rejoin fell between them in 1 CI run of about 10, and waiting for a sample to catch a prefill
  // once delayed the kill so long that the run ended inside the quarantine, before the node could rejoin.
  // The prompts stay those of prefill_heavy_agents(): each turn keeps 2 of its tokens.
  auto scripts = prefill_heavy_agents();
  for (auto& s : scripts) {
    s.replay_tool_time = true;
    for (size_t t = 12; t < s.turns.size(); ++t) {
      s.turns[t].tool_ms = 700;
      s.turns[t].gen = 40;
    }
  }
  run_options o;
  o.config = c;
  o.policy = "dualpath";
  o.scripts = std::move(scripts);
  o.processes = true;
  o.node_registry = "127.0.0.1:0";
  o.progress_every_s = 0.2;
  std::string registry;
  std::vector<int> pids;
  std::vector<int> killed;
  const uint32_t nodes = c.prefill_nodes + c.decode_nodes;
  o.on_registry = [&](const std::string& at) {
    registry = at;
    for (uint32_t n = 0; n < nodes; ++n) pids.push_back(hand_nodes::start_node(at, n, 10000, secret));
  };
  int64_t victim = -1;
  bool lost = false, back = false, restarted = false;
  uint32_t held_after = 0, placed_after = 0;
  std::vector<uint32_t> lost_nodes, rejoined;
  o.on_node_lost = [&](uint32_t node, const std::string&) {
    lost_nodes.push_back(node);
    lost = true;
  };
  o.on_node_rejoined = [&](uint32_t node) {
    rejoined.push_back(node);
    back = true;
  };
  bool filed_decode_after = false;
  double killed_at = 0, filed_at = 0;
  o.on_progress = [&](const run_progress& p) {
    // A decode node (1 or 2) filed as prefill and working there: the move is done. It comes while the turns
    // still come back to back, so a placement there is a prefill's, not one left from its decode role.
    for (uint32_t n = c.prefill_nodes; victim < 0 && n < nodes && n < p.prefill_by_node.size(); ++n) {
      if (!p.prefill_by_node[n]) continue;
      if (filed_at == 0) filed_at = p.elapsed_s;
      if (p.engine_requests_by_node[n] > 0 || p.in_flight_by_node[n] > 0) {
        victim = n;
        killed_at = p.elapsed_s;
        kill(pids[n], SIGKILL);
        killed.push_back(pids[n]);
        pids[n] = -1;
      }
    }
    if (lost && !restarted) {
      restarted = true;
      pids[size_t(victim)] = hand_nodes::start_node(registry, uint32_t(victim), 10000, secret);
    }
    if (back && size_t(victim) < p.prefill_by_node.size()) {
      filed_decode_after = filed_decode_after || p.prefill_by_node[size_t(victim)] == 0;
      held_after = std::max(held_after, p.engine_requests_by_node[size_t(victim)]);
      placed_after = std::max(placed_after, p.in_flight_by_node[size_t(victim)]);
    }
  };
  const auto s = run_cluster(o);
  for (int pid : pids) {
    REQUIRE(pid > 0);
    CHECK(hand_nodes::exit_status(pid, 10) == 0);
  }
  for (int pid : killed) waitpid(pid, nullptr, 0);
  REQUIRE(victim >= 0);
  check_turns_right(s, prefill_heavy_total, prefill_heavy_total);  // none lost, none twice, every one recomputed
  check_move(s, true, 1);  // the only move; the node that made it is a decode node again
  CHECK(s.role_switches.front().node == uint32_t(victim));
  CHECK(lost_nodes == std::vector<uint32_t>{uint32_t(victim)});
  CHECK(rejoined == std::vector<uint32_t>{uint32_t(victim)});
  CHECK(s.lost_nodes == 1);
  CHECK(s.rejoined_nodes == 1);
  CHECK(filed_decode_after);  // the scheduler files it in the cluster file's role again
  CHECK(placed_after > 0);    // and it takes turns in it
  MESSAGE("node " << victim << " moved to prefill (filed at " << filed_at << " s), killed at " << killed_at
                  << " s, rejoined as decode; up to " << placed_after
                  << " turns placed there after (its engines seen holding up to " << held_after << "); "
                  << s.migrated_turns << " turns re-run; JCT " << s.jct_s << " s");
}
