// Processes that own their signals (docs/design.md §13, "Stopping"): `dualpath run` and `dualpath node`
// sent SIGTERM at several moments (joining, wired, mid-run; embedded and one process per node) end within
// 10 s with 143, the documented code, leave no crash report behind and no node process running.
#include <doctest/doctest.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "core/secret.hpp"
#include "tests/cluster/hand_nodes.hpp"
#include "tests/common/scratch_dir.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int rounds = 20;         // per process and moment
constexpr int stop_within_s = 10;  // the bound the docs promise
constexpr int sigterm_code = 128 + SIGTERM;

// The spawned process runs in `dir`, so a crash report it might write lands there.
int spawn_in(const fs::path& dir, const std::vector<std::string>& args, const std::string& secret,
             const std::string& err) {
  const auto here = fs::current_path();
  fs::current_path(dir);
  const int pid = hand_nodes::spawn(args, secret, (dir / "stdout.txt").string(), err);
  fs::current_path(here);
  return pid;
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// True once `pid` runs its main: it catches SIGTERM and leaves SIGILL and SIGABRT to their default action
// (before main, libinfinipath's constructor catches all three; docs/design.md §13). SIGSEGV says nothing:
// libfabric's shm provider adds a handler for it once an endpoint opens. Waits up to 20 s.
bool owns_its_signals(int pid) {
  for (int i = 0; i < 1000; ++i) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("SigCgt:", 0) == 0) {
        const unsigned long long caught = std::stoull(line.substr(7), nullptr, 16);
        const auto has = [caught](int sig) { return (caught >> (sig - 1) & 1) != 0; };
        if (has(SIGTERM) && !has(SIGILL) && !has(SIGABRT)) return true;
      }
    sleep_ms(10);
  }
  return false;
}

// No file a crash leaves (libinfinipath's `*.btr`, a core dump) in `dir`.
void check_no_crash_report(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    CHECK_MESSAGE(name.find(".btr") == std::string::npos, name);
    CHECK_MESSAGE(name.rfind("core", 0) != 0, name);
  }
}

// SIGTERM to `pid`: it must end by itself with 143 within the bound.
void check_stops(int pid, const fs::path& err) {
  INFO("stderr: " << dualpath::test::slurp(err));
  REQUIRE(owns_its_signals(pid));
  REQUIRE(kill(pid, SIGTERM) == 0);
  const int rc = hand_nodes::exit_status(pid, stop_within_s);
  CHECK(rc == sigterm_code);
}

// The registry address the launcher printed (waits for it up to 20 s).
std::string registry_of(const fs::path& err) {
  const std::regex at("node registry at ([0-9.]+:[0-9]+)");
  for (int i = 0; i < 1000; ++i) {
    std::smatch m;
    const std::string text = dualpath::test::slurp(err);
    if (std::regex_search(text, m, at)) return m[1];
    sleep_ms(20);
  }
  FAIL("the launcher printed no registry address: " << dualpath::test::slurp(err));
  return "";
}

}  // namespace

// `rounds` times: `dualpath ARGS` started in a scratch directory, SIGTERMed a random moment (up to
// `max_ms`) after it took over its signals; it must stop with 143 and leave nothing behind.
void stop_rounds(uint32_t seed, const std::vector<std::string>& args, const std::string& secret, int min_ms, int max_ms,
                 const std::function<void(const fs::path&)>& after = {}) {
  std::mt19937 rng(seed);
  for (int i = 0; i < rounds; ++i) {
    CAPTURE(i);
    dualpath::test::scratch_dir dir;
    const auto err = dir.path / "stderr.txt";
    const int pid = spawn_in(dir.path, args, secret, err.string());
    REQUIRE(owns_its_signals(pid));
    sleep_ms(std::uniform_int_distribution<int>(min_ms, max_ms)(rng));
    check_stops(pid, err);
    check_no_crash_report(dir.path);
    if (after) after(dir.path);
  }
}

TEST_CASE("node: SIGTERM while it waits for an absent registry") {
  stop_rounds(11, {"node", "--registry", "127.0.0.1:1", "--node", "0"}, "s", 50, 1000);
}

TEST_CASE("run: SIGTERM to the embedded cluster at start-up or mid-run") {
  // basic alone takes seconds on the embedded default, so every moment below is before its end.
  stop_rounds(12, {"run", "--policy", "basic", "--verify-every", "0"}, "", 0, 1500);
}

TEST_CASE("node and launcher: SIGTERM while joining, wired or mid-run, nodes started by hand") {
  std::mt19937 rng(13);
  const std::string secret = dualpath::generate_secret();
  for (int i = 0; i < rounds; ++i) {
    CAPTURE(i);
    dualpath::test::scratch_dir dir;
    const auto launcher_err = dir.path / "launcher.err";
    const int launcher =
        spawn_in(dir.path, {"run", "--policy", "basic", "--verify-every", "0", "--node-registry", "127.0.0.1:0"},
                 secret, launcher_err.string());
    const std::string registry = registry_of(launcher_err);
    std::vector<int> nodes;
    for (uint32_t n = 0; n < 3; ++n)
      nodes.push_back(spawn_in(dir.path, {"node", "--registry", registry, "--node", std::to_string(n)}, secret,
                               (dir.path / ("node" + std::to_string(n) + ".err")).string()));
    // From just after the nodes asked to join to well into the run.
    sleep_ms(std::uniform_int_distribution<int>(0, 2000)(rng));
    const int victim = int(i % 3);
    check_stops(nodes[victim], dir.path / ("node" + std::to_string(victim) + ".err"));
    // A launcher that lost its only prefill (or every decode) node may end the run by itself (exit 2, naming
    // the loss) before or while it hears the signal; otherwise it stops on it with 143.
    {
      INFO("launcher: " << dualpath::test::slurp(launcher_err));
      kill(launcher, SIGTERM);
      const int rc = hand_nodes::exit_status(launcher, stop_within_s);
      if (rc == 2) CHECK(dualpath::test::slurp(launcher_err).find("engine remains") != std::string::npos);
      else CHECK(rc == sigterm_code);
    }
    // The other nodes end too: told to stop, or their launcher gone; none is left running.
    for (int n = 0; n < 3; ++n) {
      if (n == victim) continue;
      CAPTURE(n);
      kill(nodes[n], SIGTERM);
      const int rc = hand_nodes::exit_status(nodes[n], stop_within_s);
      INFO("exit status " << rc << "; node " << n << ": "
                          << dualpath::test::slurp(dir.path / ("node" + std::to_string(n) + ".err")));
      CHECK((rc == sigterm_code || rc == 0 || rc == 2));
    }
    check_no_crash_report(dir.path);
  }
}

namespace {

// The host-wide locks in shared memory now (transport/call_lock.hpp): /dev/shm/dualpath-calls-<launcher pid>.
std::set<std::string> host_locks() {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev/shm", ec))
    if (const auto name = e.path().filename().string(); name.rfind("dualpath-calls-", 0) == 0) names.insert(name);
  return names;
}

}  // namespace

TEST_CASE("run --processes: SIGTERM to the launcher stops its node processes too") {
  const auto before = host_locks();  // left by something else: not this test's to judge
  stop_rounds(14, {"run", "--policy", "basic", "--verify-every", "0", "--processes"}, "", 0, 2000,
              [&](const fs::path& dir) {
                // Its children were started with this scratch directory as their working directory.
                for (const auto& p : fs::directory_iterator("/proc")) {
                  std::error_code ec;
                  const auto cwd = fs::read_symlink(p.path() / "cwd", ec);
                  if (!ec) CHECK_MESSAGE(cwd != dir, "a process still runs in the run's directory: " << p.path());
                }
                // Nor is its host-wide lock left in shared memory (one of a launcher still running may be).
                for (const auto& name : host_locks()) {
                  if (before.count(name)) continue;
                  const int pid = std::atoi(name.c_str() + std::strlen("dualpath-calls-"));
                  CHECK_MESSAGE((pid > 0 && kill(pid, 0) == 0), "a host lock outlived its launcher: " << name);
                }
              });
}
