// No stranger gets in (docs/design.md §13): the registry admits a node, and the control port a command, only
// with the cluster's secret; refusals are logged without the secret and counted. Real processes, loopback.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "cluster/cluster.hpp"
#include "core/secret.hpp"
#include "core/status.hpp"
#include "runtime_fixtures.hpp"
#include "tests/cluster/cli_run.hpp"
#include "tests/cluster/hand_nodes.hpp"

using namespace runtime_fixtures;  // with dualpath, dualpath::cluster and fs

using dualpath::test::binary;
using dualpath::test::slurp;

namespace {

const std::string right_secret = "secret-test-right-secret-42";

using hand_nodes::exit_status;
using hand_nodes::spawn;  // `dualpath ARGS` with DUALPATH_SECRET=secret ("" = none), stdout and stderr to files

}  // namespace

TEST_CASE("secret proofs: HMAC per purpose, constant-time match, never the secret itself") {
  const auto p = secret_proof(right_secret, secret_purpose::registry);
  CHECK(p.size() == 64);
  CHECK(p.find(right_secret) == std::string::npos);
  CHECK(p == secret_proof(right_secret, secret_purpose::registry));
  CHECK(p != secret_proof(right_secret, secret_purpose::control));
  CHECK(proof_matches(p, secret_proof(right_secret, secret_purpose::registry)));
  CHECK_FALSE(proof_matches(p, secret_proof("another-secret-of-16+", secret_purpose::registry)));
  CHECK_FALSE(proof_matches(p, ""));
  CHECK_FALSE(proof_matches("", ""));  // no expected proof admits nobody
  CHECK(generate_secret().size() == 64);
  CHECK(generate_secret() != generate_secret());
  CHECK(given_secret("from-the-file") == "from-the-file");
}

TEST_CASE("a node with a wrong secret is refused, named and counted; the run goes on with the right ones") {
  test::scratch_dir dir;
  run_options o;
  o.config = small_cluster(dir.path / "tcp", 2);
  o.config.provider = "tcp";
  o.config.secret = right_secret;
  o.policy = "dualpath";
  o.processes = true;
  o.node_registry = "127.0.0.1:0";
  o.scripts = scripts(4, 3, 1);
  std::vector<int> pids;
  int stranger = 0;
  o.on_registry = [&](const std::string& at) {
    const std::vector<std::string> node_args{"node", "--registry", at, "--timeout-ms", "10000", "--node"};
    auto args = [&](uint32_t n) {
      auto a = node_args;
      a.push_back(std::to_string(n));
      return a;
    };
    // The stranger asks for node 0 first; the real node 0 still gets in after it.
    stranger = spawn(args(0), "wrong-secret-of-a-stranger", dir.path / "s.out", dir.path / "s.err");
    CHECK(exit_status(stranger, 20) == 2);
    for (uint32_t n = 0; n < 3; ++n)
      pids.push_back(spawn(args(n), right_secret, dir.path / ("n" + std::to_string(n) + ".out"),
                           dir.path / ("n" + std::to_string(n) + ".err")));
  };
  const auto s = run_cluster(o);
  for (int pid : pids) CHECK(exit_status(pid, 10) == 0);
  CHECK(s.refused_joins == 1);
  CHECK(s.verified_turns == 12);
  CHECK(s.mismatched_turns == 0);
  const std::string err = slurp(dir.path / "s.err");
  MESSAGE("refused node: " << err);
  CHECK(err.find("refused it: wrong cluster secret") != std::string::npos);
  CHECK(err.find(right_secret) == std::string::npos);
}

TEST_CASE("a run whose nodes are started by hand needs a given secret (exit 2, one message)") {
  test::scratch_dir dir;
  unsetenv(secret_env);
  run_options o;
  o.config = small_cluster(dir.path, 2);
  o.processes = true;
  o.node_registry = "127.0.0.1:0";
  CHECK_THROWS_WITH_AS(run_cluster(o), doctest::Contains("--node-registry needs the cluster's secret"), user_error);
  const auto r = test::run_cli(dir, "node --registry 127.0.0.1:1 --node 0 --timeout-ms 300");
  CHECK(r.rc == 2);
  CHECK(r.err.find("the cluster's secret is needed") != std::string::npos);
}

TEST_CASE("ctl with a wrong secret is refused (exit 2) and counted; the right secret works") {
  test::scratch_dir dir;
  unsetenv(secret_env);
  const int server = spawn({"ctl", "serve", "--listen", "127.0.0.1:0", "--seconds", "60"}, right_secret,
                           dir.path / "serve.out", dir.path / "serve.err");
  std::string port;
  const std::regex at("control port 127\\.0\\.0\\.1:([0-9]+)");
  for (int i = 0; i < 500 && port.empty(); ++i) {  // at most 10 s
    std::smatch m;
    const std::string text = slurp(dir.path / "serve.out");
    if (std::regex_search(text, m, at)) port = m[1];
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE_MESSAGE(!port.empty(), slurp(dir.path / "serve.err"));
  const std::string connect = "ctl --connect 127.0.0.1:" + port + " ";

  const auto wrong = test::run_cli(dir, connect + "--secret wrong-secret-of-a-stranger policy set basic");
  MESSAGE("refused ctl: " << wrong.err);
  CHECK(wrong.rc == 2);
  CHECK(wrong.err.find("refused the command: wrong cluster secret") != std::string::npos);
  const auto none = test::run_cli(dir, "ctl --connect 127.0.0.1:" + port + " stats");  // no secret at all
  CHECK(none.rc == 2);

  const auto right = test::run_cli(dir, connect + "--secret " + right_secret + " stats");
  CHECK(right.rc == 0);
  CHECK(right.out.find("policy: balanced") != std::string::npos);  // the wrong one switched nothing
  CHECK(right.out.find("refused commands: 1") != std::string::npos);
  kill(server, SIGTERM);
  exit_status(server, 10);
  const std::string log = slurp(dir.path / "serve.err");
  CHECK(log.find("refused 'policy set'") != std::string::npos);
  CHECK(log.find(right_secret) == std::string::npos);
  CHECK(log.find("wrong-secret-of-a-stranger") == std::string::npos);
}
