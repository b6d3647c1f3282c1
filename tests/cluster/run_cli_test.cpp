// `dualpath run` on bad input: one clear message naming what and where, exit code 2, nothing hangs.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/common/scratch_dir.hpp"

namespace fs = std::filesystem;

namespace {

struct cli_result {
  int rc = -1;
  std::string err;
};

cli_result run_cli(const dualpath::test::scratch_dir& w, const std::string& args) {
  const char* env = std::getenv("DUALPATH_BINARY");
  const std::string bin = env && *env ? env : DUALPATH_BINARY_DEFAULT;
  const std::string err = (w.path / "stderr.txt").string();
  const std::string cmd = "cd '" + w.path.string() + "' && timeout 60 '" + bin + "' " + args + " >/dev/null 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  std::stringstream ss;
  ss << std::ifstream(err).rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ss.str()};
}

}  // namespace

TEST_CASE("run: a malformed trace line names file, line and field") {
  dualpath::test::scratch_dir w;
  const auto trace = w.write("bad.jsonl", "{\"id\":\"a\",\"rounds\":[{\"append\":10,\"gen\":4}]}\n{\"id\":\"b\",\"rounds\":[{\"append\":10,\"gen\":\"x\"}]}\n");
  const auto r = run_cli(w, "run --quiet --trace " + trace);
  CHECK(r.rc == 2);
  CHECK(r.err.find("bad.jsonl:2") != std::string::npos);
  CHECK(r.err.find("rounds[0].gen") != std::string::npos);
}

TEST_CASE("run: a missing model directory, an unwritable store and a bad cluster key exit 2") {
  dualpath::test::scratch_dir w;
  auto r = run_cli(w, "run --quiet --cluster " + w.write("m.toml", "[model]\nname = \"./no-such-model-dir\"\n"));
  CHECK(r.rc == 2);
  CHECK(r.err.find("model directory './no-such-model-dir' does not exist") != std::string::npos);

  w.write("plain-file", "x");
  r = run_cli(w, "run --quiet --cluster " + w.write("s.toml", "[storage]\ndir = \"plain-file/store\"\n"));
  CHECK(r.rc == 2);
  CHECK(r.err.find("plain-file/store") != std::string::npos);

  r = run_cli(w, "run --quiet --cluster " + w.write("k.toml", "[hardware]\nsnic = 3\n"));
  CHECK(r.rc == 2);
  CHECK(r.err.find("hardware.snic") != std::string::npos);

  r = run_cli(w, "run --quiet --cluster " + w.write("t.toml", "[cluster]\nprefill_nodes = \"two\"\n"));
  CHECK(r.rc == 2);
  CHECK(r.err.find("must be an integer") != std::string::npos);

  r = run_cli(w, "run --quiet --policy fastest");
  CHECK(r.rc == 2);
  CHECK(r.err.find("known: basic") != std::string::npos);

  r = run_cli(w, "run --quiet --aps-sweep 1,fast");
  CHECK(r.rc == 2);
  CHECK(r.err.find("--aps-sweep: 'fast'") != std::string::npos);
  r = run_cli(w, "run --quiet --aps-sweep 1 --slo-ttft 0");
  CHECK(r.rc == 2);
  CHECK(r.err.find("--slo-ttft") != std::string::npos);
  r = run_cli(w, "run --quiet --processes --policy oracle");
  CHECK(r.rc == 2);
  CHECK(r.err.find("without --processes") != std::string::npos);
  r = run_cli(w, "node --registry 127.0.0.1 --node 0");
  CHECK(r.rc == 2);
  CHECK(r.err.find("expected HOST:PORT") != std::string::npos);
}

TEST_CASE("run: the embedded default writes a JSON report with every policy and the speedups") {
  dualpath::test::scratch_dir w;
  const auto r = run_cli(w, "run --quiet --max-turns 2 --agents 2 --verify-every 1 --report report.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  std::stringstream ss;
  ss << std::ifstream(w.path / "report.json").rdbuf();
  const std::string json = ss.str();
  for (const char* field : {"\"runs\"", "\"policy\": \"basic\"", "\"policy\": \"dualpath\"", "\"policy\": \"oracle\"",
                            "\"dualpath_vs_basic\"", "\"oracle_vs_dualpath\"", "\"ttft_breakdown_s\"", "\"snic_max_over_avg\"",
                            "\"jct_over_bound\"", "\"mismatched_turns\": 0", "\"verified_turns\": 4"})
    CHECK_MESSAGE(json.find(field) != std::string::npos, field);
}
