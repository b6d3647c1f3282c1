#pragma once
// A `dualpath serve` process for the serving tests: started in a scratch directory on a free loopback port,
// up once /health answers, stopped with SIGTERM at the end.
#include <doctest/doctest.h>
#include <httplib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cluster/hand_nodes.hpp"
#include "tests/observe/http_get.hpp"

namespace dualpath::test {

struct serve_process {
  scratch_dir dir;
  uint16_t port = http_get::free_port();
  int pid = -1;
  explicit serve_process(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"serve", "--listen", "127.0.0.1:" + std::to_string(port)};
    args.insert(args.end(), extra.begin(), extra.end());
    const std::string cd_log = (dir.path / "serve.log").string();
    const auto cwd = std::filesystem::current_path();
    std::filesystem::current_path(dir.path);  // its store goes in the scratch directory
    pid = hand_nodes::spawn(args, "", (dir.path / "stdout.txt").string(), cd_log);
    std::filesystem::current_path(cwd);
    // Up once /health answers: the cluster is wired (bounded; a loaded machine takes longer).
    for (int i = 0; i < 1200; ++i) {
      httplib::Client c("127.0.0.1", port);
      // 401: up, behind an API key
      if (auto r = c.Get("/health"); r && (r->status == 200 || r->status == 401)) return;
      usleep(100000);
    }
    FAIL("serve did not answer /health within 120 s: " << slurp(dir.path / "serve.log"));
  }
  ~serve_process() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      hand_nodes::exit_status(pid, 20);
    }
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120, 0);
    return c;
  }
  httplib::Result chat(const nlohmann::json& body) const {
    return client().Post("/v1/chat/completions", body.dump(), "application/json");
  }
};

}  // namespace dualpath::test
