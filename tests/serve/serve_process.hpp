#pragma once
// A `dualpath serve` process for the serving tests: started in a scratch directory on a free loopback port,
// up once /health answers, stopped with SIGTERM at the end (or restarted on the same store).
#include <doctest/doctest.h>
#include <httplib.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cluster/hand_nodes.hpp"
#include "tests/observe/http_get.hpp"

namespace dualpath::test {

struct serve_process {
  scratch_dir dir;
  std::vector<std::string> extra;  // arguments beyond serve --listen
  std::string secret;              // the cluster's, in its environment (DUALPATH_SECRET) when given
  uint16_t port = 0;
  int pid = -1;
  // Up unless `wait` is false: then the caller does what the server waits for (nodes joining) and wait_up().
  explicit serve_process(std::vector<std::string> extra_args = {}, std::string cluster_secret = "", bool wait = true)
      : extra(std::move(extra_args)), secret(std::move(cluster_secret)) {
    start(wait);
  }
  ~serve_process() { stop(); }
  // Starts the server in the scratch directory (again, after stop(): the store is kept) on a free port.
  void start(bool wait = true) {
    port = http_get::free_port();
    std::vector<std::string> args{"serve", "--listen", "127.0.0.1:" + std::to_string(port)};
    args.insert(args.end(), extra.begin(), extra.end());
    const std::string cd_log = (dir.path / "serve.log").string();
    const auto cwd = std::filesystem::current_path();
    std::filesystem::current_path(dir.path);  // its store goes in the scratch directory
    pid = hand_nodes::spawn(args, secret, (dir.path / "stdout.txt").string(), cd_log);
    std::filesystem::current_path(cwd);
    if (wait) wait_up();
  }
  // Up once /health answers: the cluster is wired (bounded; a loaded machine takes longer).
  void wait_up() const {
    for (int i = 0; i < 1200; ++i) {
      httplib::Client c("127.0.0.1", port);
      // 401: up, behind an API key
      if (auto r = c.Get("/health"); r && (r->status == 200 || r->status == 401)) return;
      usleep(100000);
    }
    FAIL("serve did not answer /health within 120 s: " << slurp(dir.path / "serve.log"));
  }
  // SIGTERM; its exit status (-1: killed after 20 s), or -1 when it was not running.
  int stop() {
    if (pid <= 0) return -1;
    kill(pid, SIGTERM);
    const int status = hand_nodes::exit_status(pid, 20);
    pid = -1;
    return status;
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120, 0);
    return c;
  }
  httplib::Result chat(const nlohmann::json& body) const {
    return client().Post("/v1/chat/completions", body.dump(), "application/json");
  }
  // A sample's value in the server's /metrics text (0 when absent); `series` is its name and labels.
  static double metric(const std::string& text, const std::string& series) {
    const size_t at = text.find("\n" + series + " ");  // a sample's line, not its # HELP
    return at == std::string::npos ? 0.0 : std::stod(text.substr(at + series.size() + 2));
  }
  // serve --verify's counts by result (equal, different, unchecked), once `answers` have been checked or
  // after `seconds` (the recompute runs behind the answers).
  std::map<std::string, double> verified_answers(double answers, int seconds) const {
    std::map<std::string, double> n;
    for (int i = 0; i < seconds * 10; ++i) {
      const auto m = client().Get("/metrics");
      REQUIRE(m);
      for (const char* result : {"equal", "different", "unchecked"})
        n[result] = metric(m->body, std::string("dualpath_serve_verified_answers{result=\"") + result + "\"}");
      if (n["equal"] + n["different"] + n["unchecked"] >= answers) break;
      usleep(100000);
    }
    return n;
  }
};

}  // namespace dualpath::test
