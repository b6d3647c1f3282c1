#pragma once
// `dualpath node` processes started by hand, as an operator would on another host (docs/design.md §13), for
// the tests of runs with `--node-registry`, and other `dualpath` processes the tests start: the secret goes in
// the environment, out of `ps`.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/secret.hpp"
#include "tests/cluster/cli_run.hpp"

extern char** environ;

namespace hand_nodes {

// Starts `dualpath ARGS` with DUALPATH_SECRET=secret in its environment (none when empty), stdout and
// stderr to the files given (inherited when empty).
inline int spawn(const std::vector<std::string>& args, const std::string& secret, const std::string& out = "",
                 const std::string& err = "") {
  std::vector<std::string> all{dualpath::test::binary()};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string prefix = std::string(dualpath::secret_env) + "=";
  std::vector<std::string> env_text;
  if (!secret.empty()) env_text.push_back(prefix + secret);
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind(prefix, 0) != 0) env_text.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!out.empty()) posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!err.empty()) posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  return pid;
}

// Starts `dualpath node --registry R --node N --timeout-ms T [extra...]` with `secret` in its environment;
// its stderr goes to `log` when given.
inline int start_node(const std::string& registry, uint32_t node, int timeout_ms, const std::string& secret,
                      const std::vector<std::string>& extra = {}, const std::string& log = "") {
  std::vector<std::string> args{
      "node", "--registry", registry, "--node", std::to_string(node), "--timeout-ms", std::to_string(timeout_ms)};
  args.insert(args.end(), extra.begin(), extra.end());
  return spawn(args, secret, "", log);
}

// The exit status of `pid`, waiting at most `seconds` (-1 if it is still running then: it gets killed).
inline int exit_status(int pid, int seconds) {
  for (int i = 0; i < seconds * 50; ++i) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    usleep(20000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

}  // namespace hand_nodes
