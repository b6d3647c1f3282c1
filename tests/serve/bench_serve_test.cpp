// `dualpath bench serve` against a running `dualpath serve`: the embedded default's demo workload replayed over
// HTTP, reported in `run`'s shape. Every turn answered, later turns load the turns before's blocks, the
// server's read paths add up to the turns, and a bad address is one clear error with exit 2.
#include <doctest/doctest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/serve/serve_process.hpp"

using json = nlohmann::json;

namespace {

int exit_code(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("bench serve: the demo workload over HTTP, reported as a run") {
  dualpath::test::serve_process s;
  const auto report = s.dir.path / "bench.json";
  const std::string cmd =
      "timeout 300 '" + dualpath::test::binary() + "' bench serve --url http://127.0.0.1:" + std::to_string(s.port) +
      "/v1 --concurrency 4 --quiet --report '" + report.string() + "' 2>'" + (s.dir.path / "bench.err").string() + "'";
  REQUIRE_MESSAGE(exit_code(cmd) == 0, dualpath::test::slurp(s.dir.path / "bench.err"));
  const auto j = json::parse(dualpath::test::slurp(report));
  REQUIRE(j["runs"].size() == 1);
  const auto& r = j["runs"][0];
  CHECK(r["policy"] == "served");
  CHECK(r["client"] == "bench serve");
  const int turns = r["turns"].get<int>();
  CHECK(turns >= 12);  // 6 agents, several turns each
  CHECK(r["failed_turns"] == 0);
  CHECK(r["errors_by_status"].empty());
  CHECK(r["ttft_s"]["p50"].get<double>() > 0);
  CHECK(r["e2e_s"]["p50"].get<double>() >= r["ttft_s"]["p50"].get<double>());
  CHECK(r["tpot_s"]["p50"].get<double>() > 0);
  CHECK(r["requests_per_s"].get<double>() > 0);
  // Later turns load what earlier turns persisted: the carried context and the kept generation.
  CHECK(r["cached_share"].get<double>() > 0.3);
  const auto& paths = r["path_requests"];
  CHECK(paths["pe"].get<int>() + paths["de"].get<int>() + paths["split"].get<int>() == turns);
}

TEST_CASE("bench serve: no server at the address is one message and exit 2") {
  dualpath::test::scratch_dir dir;
  const auto err = dir.path / "err";
  const std::string cmd =
      "timeout 60 '" + dualpath::test::binary() + "' bench serve --url 127.0.0.1:1 --quiet 2>'" + err.string() + "'";
  CHECK(exit_code(cmd) == 2);
  CHECK(dualpath::test::slurp(err).find("127.0.0.1:1/v1/models") != std::string::npos);
}
