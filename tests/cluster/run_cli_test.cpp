// `dualpath run` on bad input: one clear message naming what and where, exit code 2, nothing hangs.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cluster/cli_run.hpp"

namespace fs = std::filesystem;

using dualpath::test::run_cli;

TEST_CASE("run: a malformed trace line names file, line and field") {
  dualpath::test::scratch_dir w;
  const auto trace = w.write("bad.jsonl",
                             "{\"id\":\"a\",\"rounds\":[{\"append\":10,\"gen\":4}]}\n{\"id\":\"b\",\"rounds\":[{"
                             "\"append\":10,\"gen\":\"x\"}]}\n");
  const auto r = run_cli(w, "run --quiet --trace " + trace);
  CHECK(r.rc == 2);
  CHECK(r.err.find("bad.jsonl:2") != std::string::npos);
  CHECK(r.err.find("rounds[0].gen") != std::string::npos);
}

TEST_CASE("run: a missing model directory, an unwritable store and bad flags or cluster keys exit 2") {
  dualpath::test::scratch_dir w;
  w.write("plain-file", "x");
  // Each bad invocation and a piece of the message that must name what is wrong.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run --quiet --cluster " + w.write("m.toml", "[model]\nname = \"./no-such-model-dir\"\n"),
       "model directory './no-such-model-dir' does not exist"},
      {"run --quiet --cluster " + w.write("s.toml", "[storage]\ndir = \"plain-file/store\"\n"), "plain-file/store"},
      {"run --quiet --cluster " + w.write("k.toml", "[hardware]\nsnic = 3\n"), "hardware.snic"},
      {"run --quiet --cluster " + w.write("t.toml", "[cluster]\nprefill_nodes = \"two\"\n"), "must be an integer"},
      {"run --quiet --policy fastest", "known: basic"},
      {"run --quiet --aps-sweep 1,fast", "--aps-sweep: 'fast'"},
      {"run --quiet --aps-sweep 1 --slo-ttft 0", "--slo-ttft"},
      {"run --quiet --processes --policy oracle", "without --processes"},
      {"node --registry 127.0.0.1 --node 0", "expected HOST:PORT"},
      {"run --quiet --series-window 0", "--series-window"},
      {"node --registry 127.0.0.1:1 --node 0 --metrics-port x", "--metrics-port"},
  };
  dualpath::test::check_refused(w, cases);
}

TEST_CASE("run: the embedded default writes a JSON report with every policy and the speedups") {
  dualpath::test::scratch_dir w;
  const auto r = run_cli(w, "run --quiet --max-turns 2 --agents 2 --verify-every 1 --report report.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  std::stringstream ss;
  ss << std::ifstream(w.path / "report.json").rdbuf();
  const std::string json = ss.str();
  for (const char* field :
       {"\"runs\"", "\"policy\": \"basic\"", "\"policy\": \"dualpath\"", "\"policy\": \"oracle\"",
        "\"dualpath_vs_basic\"", "\"oracle_vs_dualpath\"", "\"ttft_breakdown_s\"", "\"snic_max_over_avg\"",
        "\"jct_over_bound\"", "\"mismatched_turns\": 0", "\"verified_turns\": 4", "\"load_over_time\"",
        "\"retried_turns\": 0", "\"unpersisted_blocks\": 0"})
    CHECK_MESSAGE(json.find(field) != std::string::npos, field);
  // Every turn reached a decode engine, which stamped its hand-off and its KV loaded into HBM; the turn
  // waited for its blocks' write-back after its last token.
  // Parsed into a local first: a range-for over parse(...)["runs"] iterates a member of a temporary that is
  // already destroyed (ASan: heap-use-after-free).
  const auto report = nlohmann::json::parse(json);
  for (const auto& run : report["runs"]) {
    const auto& b = run["handoff_breakdown_s"];
    CAPTURE(run["policy"].get<std::string>());
    CHECK(b["handoff"]["mean"].get<double>() > 0);
    CHECK(b["hbm_load"]["mean"].get<double>() > 0);
    CHECK(b["write_back"]["mean"].get<double>() >= 0);
    CHECK(b["hbm_load"]["p99"].get<double>() < run["e2e_s"]["p99"].get<double>());
  }
}
