// `dualpath sim`, `dualpath plan` and `dualpath bench sim` from the command line: reports with the run's
// fields and the simulator's counters, and one clear message with exit code 2 on bad input.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cluster/cli_run.hpp"

using dualpath::test::run_cli;

namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("sim: the paper's cluster by default, run's report plus the simulator's counters") {
  dualpath::test::scratch_dir w;
  const auto r = run_cli(w, "sim --preset 64k --agents 24 --max-turns 20 --compare basic,dualpath --report r.json");
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("dualpath_vs_basic") != std::string::npos);
  const auto j = read_json((w.path / "r.json").string());
  REQUIRE(j["runs"].size() == 2);
  for (const auto& run : j["runs"]) {
    CHECK(run["turns"].get<uint64_t>() == 24 * 20);
    CHECK(run["sim"]["events"].get<uint64_t>() > 0);
    CHECK(run["sim"]["decisions"].get<uint64_t>() == 24 * 20);
    // The paper's CNIC (50 GB/s per GPU) loads each turn's KV into decode HBM in a simulated while; the
    // simulator's hand-off itself is instantaneous.
    const auto& b = run["handoff_breakdown_s"];
    CHECK(b["handoff"]["mean"].get<double>() == 0);
    CHECK(b["hbm_load"]["mean"].get<double>() > 0);
    CHECK(b["hbm_load"]["p99"].get<double>() < run["e2e_s"]["p99"].get<double>());
  }
  CHECK(j["speedup"]["dualpath_vs_basic"].get<double>() > 1.0);
}

TEST_CASE("sim and run: --time-scale stretches a Mooncake trace's recorded gaps") {
  dualpath::test::scratch_dir w;
  const auto trace =
      w.write("m.jsonl",
              "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": [1, 2]}\n"
              "{\"timestamp\": 10000, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": [1, 2]}\n");
  double jct[2] = {0, 0};
  int k = 0;
  for (const char* scale : {"1", "0.1"}) {
    const auto r = run_cli(w, std::string("sim --trace ") + trace + " --time-scale " + scale + " --report t.json");
    REQUIRE(r.rc == 0);
    jct[k++] = read_json((w.path / "t.json").string())["runs"][0]["jct_s"].get<double>();
  }
  CHECK(jct[0] > 10.0);  // the second request arrives 10 s in
  CHECK(jct[1] < 2.0);   // and 1 s in at a tenth of the gaps
  CHECK(run_cli(w, "sim --trace " + trace + " --time-scale 0").rc == 2);
  CHECK(run_cli(w, "run --quiet --trace " + trace + " --time-scale -1").rc == 2);
}

TEST_CASE("plan: every split inside the bounds simulated, one recommended; bench sim reports its speed") {
  dualpath::test::scratch_dir w;
  const auto r = run_cli(w, "plan --nodes 3 --preset 64k --agents 16 --max-turns 10 --quiet --json");
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["layouts"].size() == 2);
  const auto p = j["recommended"]["prefill_nodes"].get<uint32_t>();
  CHECK((p == 1 || p == 2));
  for (const auto& l : j["layouts"]) CHECK(l["jct_s"].get<double>() > 0);
  const auto b = run_cli(w, "bench sim --agents 16 --json");
  REQUIRE(b.rc == 0);
  const auto bj = nlohmann::json::parse(b.out);
  CHECK(bj["turns"].get<uint64_t>() > 0);
  CHECK(bj["peak_rss_gb"].get<double>() > 0);
}

TEST_CASE("plan --adaptive: an adaptive row from every split; the best recommended only 2% past the best static") {
  dualpath::test::scratch_dir w;
  const auto r = run_cli(w, "plan --nodes 3 --preset 64k --agents 16 --max-turns 10 --adaptive --quiet --json");
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["layouts"].size() == 4);
  double best_static = 1e300, best_adaptive = 1e300;
  uint32_t adaptive_p = 0;
  for (const auto& l : j["layouts"]) {
    const double jct = l["jct_s"].get<double>();
    CHECK(jct > 0);
    if (!l["adaptive"].get<bool>()) {
      best_static = std::min(best_static, jct);
      continue;
    }
    CHECK(l.contains("role_switches"));
    if (jct < best_adaptive) best_adaptive = jct, adaptive_p = l["prefill_nodes"].get<uint32_t>();
  }
  const auto& rec = j["recommended"];
  CHECK(rec["adaptive"].get<bool>() == (best_adaptive < 0.98 * best_static));
  if (rec["adaptive"].get<bool>()) CHECK(rec["prefill_nodes"].get<uint32_t>() == adaptive_p);
}

TEST_CASE("plot: the pictures of a report are PNG files; a report that is not one exits 2") {
  dualpath::test::scratch_dir w;
  REQUIRE(run_cli(w, "sim --preset 64k --agents 16 --max-turns 10 --compare basic,dualpath --report r.json").rc == 0);
  const auto r = run_cli(w, "plot r.json -o pics");
  REQUIRE(r.rc == 0);
  for (const char* name : {"jct.png", "ttft_breakdown.png", "snic_over_time.png", "latency.png"}) {
    CAPTURE(name);
    CHECK(r.out.find(name) != std::string::npos);
    std::ifstream in(w.path / "pics" / name, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    CHECK(std::string(magic + 1, 3) == "PNG");
  }
  const auto bad = run_cli(w, "plot " + w.write("x.json", "{\"turns\": 3}") + " -o pics");
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("neither a run, a sweep nor a validation report") != std::string::npos);
  CHECK(run_cli(w, "plot missing.json").rc == 2);
}

TEST_CASE("sim, plan: bad input is one message and exit 2") {
  dualpath::test::scratch_dir w;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sim --model gpt-9", "unknown model 'gpt-9'"},
      {"sim --policy fastest", "known: basic"},
      {"sim --trace " + w.write("bad.jsonl", "{\"id\":\"a\",\"rounds\":[{\"append\":3}]}\n"), "bad.jsonl:1"},
      {"sim --trace no-such.jsonl", "no-such.jsonl"},
      {"sim --write-back later", "--write-back"},
      {"sim --prefill-nodes 0", "cluster.prefill_nodes"},
      {"plan --nodes 1", "--nodes must be at least 2"},
      {"plan --nodes 4 --snic-gbps 400 --cnic-gbps 50", "infeasible hardware"},
  };
  dualpath::test::check_refused(w, cases);
}

TEST_CASE("sim --timeline: every turn of every run as a JSON line, consistent with the report") {
  dualpath::test::scratch_dir w;
  const auto r = run_cli(w,
                         "sim --preset 32k --agents 5 --max-turns 3 --compare round_robin,queue_aware --quiet "
                         "--report r.json --timeline t.jsonl");
  REQUIRE(r.rc == 0);
  const auto report = read_json((w.path / "r.json").string());
  std::ifstream in(w.path / "t.jsonl");
  std::map<std::string, std::vector<nlohmann::json>> runs;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    runs[j["run"].get<std::string>()].push_back(j);
  }
  REQUIRE(runs.size() == 2);
  for (const auto& run : report["runs"]) {
    const auto policy = run["policy"].get<std::string>();
    CAPTURE(policy);
    const auto& turns = runs[policy];
    REQUIRE(turns.size() == 5 * 3);
    double last = 0, write_back_sum = 0;
    std::map<uint32_t, std::vector<nlohmann::json>> by_agent;
    for (const auto& t : turns) {
      CHECK(!t.contains("error"));
      const double start = t["start_s"], first = t["first_token_s"], done = t["done_s"];
      // The stages add up to the time to first token, and the answer ends after it.
      const double stages = t["queue_s"].get<double>() + t["kv_read_s"].get<double>() + t["pass_wait_s"].get<double>() +
                            t["pass_s"].get<double>();
      CHECK(first - start == doctest::Approx(stages).epsilon(1e-9));
      CHECK(done >= first);
      // After the first token: the hand-off, the load into HBM and the wait for the write-back fit before the
      // answer; the report's mean write-back wait is these turns'.
      const double handoff = t["handoff_s"], hbm = t["hbm_load_s"], write_back = t["write_back_s"];
      CHECK(handoff >= 0);
      CHECK(hbm >= 0);
      CHECK(write_back >= 0);
      CHECK(handoff + hbm + write_back <= done - first + 1e-9);
      write_back_sum += write_back;
      CHECK(done >= last);  // in the order they finished
      last = done;
      CHECK(t["hit_tokens"].get<uint32_t>() <= t["prompt_tokens"].get<uint32_t>());
      by_agent[t["agent"].get<uint32_t>()].push_back(t);
    }
    CHECK(last == doctest::Approx(run["jct_s"].get<double>()));
    CHECK(write_back_sum / double(turns.size()) ==
          doctest::Approx(run["handoff_breakdown_s"]["write_back"]["mean"].get<double>()));
    REQUIRE(by_agent.size() == 5);
    for (auto& [agent, list] : by_agent) {
      CAPTURE(agent);
      for (size_t k = 0; k < list.size(); ++k) {
        CHECK(list[k]["turn"].get<size_t>() == k);
        if (k > 0) CHECK(list[k]["start_s"].get<double>() >= list[k - 1]["done_s"].get<double>());  // a chain
        if (k > 0) CHECK(list[k]["hit_tokens"].get<uint32_t>() > 0);  // the earlier turns' blocks are hits
      }
    }
  }
  const auto bad = run_cli(w, "sim --preset 32k --agents 2 --max-turns 1 --quiet --timeline no/such/dir/t.jsonl");
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("no/such/dir/t.jsonl") != std::string::npos);
}
