// One process per node (docs/design.md §13): the launcher starts `dualpath node` processes, wires them through its
// registry, and the run behaves like the embedded one. Real processes, real sockets, real fabric.
#include <doctest/doctest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cluster/cluster.hpp"
#include "cluster/node_processes.hpp"
#include "core/secret.hpp"
#include "core/status.hpp"
#include "runtime_fixtures.hpp"
#include "tests/cluster/hand_nodes.hpp"

extern char** environ;

using namespace runtime_fixtures;  // with dualpath, dualpath::cluster and fs

namespace {

using dualpath::test::binary;

// A storage-bound 1P2D cluster whose nodes are processes of their own.
run_options processes_run(const fs::path& dir, const std::string& provider) {
  run_options o;
  o.config = small_cluster(dir / provider, 2);
  o.config.provider = provider;
  o.policy = "dualpath";
  o.processes = true;
  o.node_program = binary();
  o.scripts = scripts(4, 3, 1);
  return o;
}

bool gone(int pid) { return kill(pid, 0) != 0; }

// The cluster's secret of the runs whose nodes are started by hand (docs/design.md §13).
const std::string hand_secret = "multiprocess-test-secret";

int start_node(const std::string& registry, uint32_t node, int timeout_ms = 10000,
               const std::string& secret = hand_secret) {
  return hand_nodes::start_node(registry, node, timeout_ms, secret);
}
using hand_nodes::exit_status;

}  // namespace

TEST_CASE("one process per node: dualpath turns match a full recompute over tcp and shm, both paths used") {
  test::scratch_dir dir;
  for (const char* provider : {"tcp", "shm"}) {
    CAPTURE(provider);
    auto o = processes_run(dir.path, provider);
    std::vector<int> pids;
    // The launcher's host-wide lock (docs/design.md §13) is there while its nodes run and gone after.
    const std::string lock = "/dev/shm" + host_call_lock_name(getpid());
    bool lock_while_running = false;
    o.on_nodes_started = [&](const std::vector<int>& p) {
      pids = p;
      lock_while_running = access(lock.c_str(), F_OK) == 0;
    };
    const auto s = run_cluster(o);
    CHECK(lock_while_running);
    CHECK(access(lock.c_str(), F_OK) != 0);
    REQUIRE(pids.size() == 3);
    for (int pid : pids) {
      CHECK(pid != getpid());
      CHECK(gone(pid));  // reaped once the run ended
    }
    check_turns_right(s, 12, 12);
    CHECK(s.path_pe > 0);
    CHECK(s.path_de + s.path_split > 0);
    REQUIRE(s.snic_bytes.size() == 3);  // counters come back from each node process
    CHECK(s.snic_bytes[0] > 0);
    CHECK(s.snic_bytes[1] + s.snic_bytes[2] > 0);
    CHECK(s.persisted_blocks > 0);
    CHECK(s.hit_blocks > 0);
  }
}

// Across node processes `de_fetch = "auto"` pulls (docs/design.md §4: prefill nodes read the decode nodes'
// buffers with RMA reads; the case above). Named `push`, the decode nodes' traffic queues write them, a
// message a layer between processes; every turn still matches a full recompute either way.
TEST_CASE("one process per node: with pushed DE-path fetches, turns match a full recompute over tcp and shm") {
  test::scratch_dir dir;
  for (const char* provider : {"tcp", "shm"}) {
    CAPTURE(provider);
    auto o = processes_run(dir.path, provider);
    o.config.de_fetch = de_fetch_kind::push;
    const auto s = run_cluster(o);
    check_turns_right(s, 12, 12);
    CHECK(s.path_de + s.path_split > 0);
    CHECK(s.hit_blocks > 0);
  }
}

TEST_CASE("one process per node: a node that dies ends the run with its name, and no node is left behind") {
  test::scratch_dir dir;
  auto o = processes_run(dir.path, "tcp");
  std::vector<int> pids;
  o.on_nodes_started = [&](const std::vector<int>& p) {
    pids = p;
    kill(p[0], SIGKILL);  // the only prefill node, before any turn finished: nothing can go on
  };
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(run_cluster(o), doctest::Contains("no prefill engine remains (lost: node 0 (pid"), user_error);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
  REQUIRE(pids.size() == 3);
  for (int pid : pids) CHECK(gone(pid));
}

TEST_CASE("fault seam node_stop: node processes that die right after wiring end the run, named, with nothing left") {
  test::scratch_dir dir;
  auto o = processes_run(dir.path, "tcp");
  std::vector<int> pids;
  o.on_nodes_started = [&](const std::vector<int>& p) { pids = p; };
  setenv("DUALPATH_FAULTS", "node_stop", 1);  // read by the node processes this run starts, not by this one
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(run_cluster(o), doctest::Contains("(pid"), user_error);
  unsetenv("DUALPATH_FAULTS");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
  for (int pid : pids) CHECK(gone(pid));
}

TEST_CASE("one process per node: oracle is refused, and a node without a registry exits 2 in time") {
  test::scratch_dir dir;
  auto o = processes_run(dir.path, "tcp");
  o.policy = "oracle";
  CHECK_THROWS_WITH_AS(run_cluster(o), doctest::Contains("without --processes"), user_error);

  const std::string err = (dir.path / "err.txt").string();
  const std::string cmd = "DUALPATH_SECRET=" + hand_secret + " timeout 20 '" + binary() +
                          "' node --registry 127.0.0.1:1 --node 0 --timeout-ms 500 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  std::ifstream in(err);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("127.0.0.1:1") != std::string::npos);
}

TEST_CASE("nodes started by hand join the registry at --node-registry; the run is the same") {
  test::scratch_dir dir;
  auto o = processes_run(dir.path, "tcp");
  o.node_program.clear();
  o.node_registry = "127.0.0.1:0";
  o.config.secret = hand_secret;
  std::vector<int> pids;
  o.on_registry = [&](const std::string& at) {
    for (uint32_t n = 0; n < 3; ++n) pids.push_back(start_node(at, 2 - n));  // any order
  };
  const auto s = run_cluster(o);
  REQUIRE(pids.size() == 3);
  for (int pid : pids) CHECK(exit_status(pid, 10) == 0);  // each node stops cleanly when told
  CHECK(s.verified_turns == 12);
  CHECK(s.mismatched_turns == 0);
  CHECK(s.path_de + s.path_split > 0);
  REQUIRE(s.snic_bytes.size() == 3);
  CHECK(s.snic_bytes[1] + s.snic_bytes[2] > 0);
}

TEST_CASE("a node that never joins is named once the start-up timeout passes; the others exit") {
  test::scratch_dir dir;
  auto o = processes_run(dir.path, "tcp");
  o.config.timeout_s = 3;
  o.node_program.clear();
  o.node_registry = "127.0.0.1:0";
  o.config.secret = hand_secret;
  std::vector<int> pids;
  o.on_registry = [&](const std::string& at) {
    pids.push_back(start_node(at, 0, 4000));
    pids.push_back(start_node(at, 2, 4000));
  };
  CHECK_THROWS_WITH_AS(run_cluster(o), doctest::Contains("never joined: 1"), user_error);
  for (int pid : pids) CHECK(exit_status(pid, 15) == 2);  // they report the lost launcher and exit 2
}
