// Several hosts for real (docs/design.md §13): every process of a multi-process run in a network namespace of its
// own, joined by veth pairs on a bridge, private addresses inside those namespaces only, KV over libfabric's
// `tcp` provider between them and the store on a path all of them see. The launcher is
// `dualpath run --node-registry` and each node `dualpath node`, started with `ip netns exec`.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/secret.hpp"
#include "tests/cluster/cli_run.hpp"
#include "tests/common/scratch_dir.hpp"

extern char** environ;

namespace fs = std::filesystem;

using dualpath::test::binary;
using dualpath::test::slurp;

namespace {

// One shell command, bounded; true when it exited 0.
bool sh(const std::string& cmd) {
  const int status = std::system(("timeout 20 " + cmd + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The namespaces of one test: a hub with a bridge, and one namespace per process on it. Everything is
// deleted (and with it the veth pairs) when the test ends, passed or not.
struct namespaces {
  std::string prefix = "dp" + std::to_string(getpid()) + "-";
  std::vector<std::string> made;
  std::string hub() const { return prefix + "hub"; }

  bool add_hub() {
    if (!sh("ip netns add " + hub())) return false;
    made.push_back(hub());
    return sh("ip netns exec " + hub() + " ip link add br0 type bridge") &&
           sh("ip netns exec " + hub() + " ip link set br0 up");
  }
  // Namespace `name` with eth0 at `address`/24 on the hub's bridge.
  bool add(const std::string& name, const std::string& address) {
    const std::string ns = prefix + name, veth = prefix + name + "h";  // <= 15 characters for pids < 10^7
    if (!sh("ip netns add " + ns)) return false;
    made.push_back(ns);
    return sh("ip link add " + veth + " netns " + hub() + " type veth peer name eth0 netns " + ns) &&
           sh("ip netns exec " + hub() + " ip link set " + veth + " master br0 up") &&
           sh("ip netns exec " + ns + " ip addr add " + address + "/24 dev eth0") &&
           sh("ip netns exec " + ns + " ip link set eth0 up") && sh("ip netns exec " + ns + " ip link set lo up");
  }
  ~namespaces() {
    for (auto it = made.rbegin(); it != made.rend(); ++it) sh("ip netns del " + *it);
  }
};

// Processes this test started; whatever still runs at the end is killed and reaped.
struct processes {
  std::vector<int> pids;
  int start(const std::vector<std::string>& args, const std::vector<std::string>& extra_env, const fs::path& log) {
    std::vector<std::string> a = args;
    std::vector<char*> argv;
    for (auto& x : a) argv.push_back(x.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_text = extra_env;
    for (char** e = environ; *e; ++e) env_text.emplace_back(*e);
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    REQUIRE(rc == 0);
    pids.push_back(pid);
    return pid;
  }
  // Exit code of `pid` within `deadline` (-1: still running; it is killed at the end).
  int wait(int pid, std::chrono::steady_clock::time_point deadline) {
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        pids.erase(std::remove(pids.begin(), pids.end(), pid), pids.end());
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  ~processes() {
    for (int pid : pids) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

// The embedded default cluster of `dualpath run` (1P2D tiny, cpu backend, SNICs capped at 4 MB/s), over tcp.
std::string cluster_file(const fs::path& store, const std::string& secret) {
  return "[model]\nname = \"tiny\"\nbackend = \"cpu\"\nseed = 7\n"
         "[cluster]\nprefill_nodes = 1\ndecode_nodes = 2\nengines_per_node = 1\nblock_tokens = 16\n"
         "[hardware]\nsnic_gb_per_s = 0.004\ndram_buffer_gb = 0.064\nhbm_gb = 0.064\nprovider = \"tcp\"\n"
         "[storage]\ndir = \"" +
         store.string() +
         "\"\n"
         "[schedule]\npolicy = \"dualpath\"\nquota_ms = 300\n"
         "[runtime]\ntimeout_s = 60\nsecret = \"" +
         secret + "\"\n";
}

}  // namespace

TEST_CASE(
    "several hosts: launcher and three nodes in network namespaces of their own, tcp between them, 48/48 verified") {
  if (geteuid() != 0) {
    MESSAGE("skipped: creating network namespaces needs root (euid " << geteuid() << ")");
    return;
  }
  if (!sh("ip -V")) {
    MESSAGE("skipped: no `ip` command (iproute2) to create network namespaces");
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  namespaces ns;
  if (!ns.add_hub()) {
    MESSAGE("skipped: `ip netns add` failed here (no CAP_SYS_ADMIN or no netns support)");
    return;
  }
  REQUIRE(ns.add("l", "10.77.0.1"));
  for (int n = 0; n < 3; ++n) REQUIRE(ns.add("n" + std::to_string(n), "10.77.0." + std::to_string(10 + n)));
  const double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  dualpath::test::scratch_dir dir;  // the store path every namespace sees (they share the file system)
  const std::string secret = dualpath::generate_secret();
  const fs::path cluster = dir.path / "cluster.toml", report = dir.path / "report.json";
  std::ofstream(cluster) << cluster_file(dir.path / "store", secret);

  processes procs;
  const auto t1 = std::chrono::steady_clock::now();
  // The registry's port is free for sure: nothing else lives in the launcher's namespace.
  const std::string registry = "10.77.0.1:7411";
  const int launcher =
      procs.start({"ip", "netns", "exec", ns.prefix + "l", binary(), "run", "--cluster", cluster.string(),
                   "--node-registry", registry, "--verify-every", "1", "--report", report.string()},
                  {}, dir.path / "launcher.log");
  std::vector<int> nodes;
  for (int n = 0; n < 3; ++n)
    nodes.push_back(procs.start({"ip", "netns", "exec", ns.prefix + "n" + std::to_string(n), binary(), "node",
                                 "--registry", registry, "--node", std::to_string(n), "--timeout-ms", "30000"},
                                {std::string(dualpath::secret_env) + "=" + secret},
                                dir.path / ("node" + std::to_string(n) + ".log")));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  const int rc = procs.wait(launcher, deadline);
  const double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  const std::string log = slurp(dir.path / "launcher.log");
  INFO("launcher: " << log);
  std::string node_logs;
  for (int n = 0; n < 3; ++n)
    node_logs += "node " + std::to_string(n) + ": " + slurp(dir.path / ("node" + std::to_string(n) + ".log"));
  INFO("nodes: " << node_logs);
  REQUIRE(rc == 0);
  for (int pid : nodes) CHECK(procs.wait(pid, std::chrono::steady_clock::now() + std::chrono::seconds(20)) == 0);

  const auto j = nlohmann::json::parse(slurp(report));
  const auto& r = j.at("runs").at(0);
  CHECK(r.at("verified_turns").get<uint64_t>() == 48);
  CHECK(r.at("mismatched_turns").get<uint64_t>() == 0);
  CHECK(r.at("refused_peers").at("registry").get<uint64_t>() == 0);
  const auto snic = r.at("snic_bytes").get<std::vector<uint64_t>>();
  REQUIRE(snic.size() == 3);
  CHECK(snic[1] + snic[2] > 0);  // decode nodes read too: KV crossed namespaces over tcp
  CHECK(log.find(secret) == std::string::npos);
  CHECK(slurp(report).find(secret) == std::string::npos);
  MESSAGE("namespaces: setup " << setup_s << " s; run " << run_s << " s wall (launcher start to exit), JCT "
                               << r.at("jct_s").get<double>() << " s, verified "
                               << r.at("verified_turns").get<uint64_t>() << "/48, paths pe/de/split "
                               << r.at("path_requests").dump());
}
