// Runs the built `dualpath` binary: exit codes (0 ok, 2 bad input) and the JSON fields scripts rely on.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "test_util.hpp"

using dualpath::test::run_cli;
using json = nlohmann::json;

namespace {
json parse_ok(const dualpath::test::run_result& r) {
  INFO("stderr: " << r.err);
  REQUIRE(r.rc == 0);
  return json::parse(r.out);
}
}  // namespace

TEST_CASE("the dualpath binary is there") {
  INFO("DUALPATH_BINARY = " << dualpath::test::binary());
  REQUIRE(std::filesystem::exists(dualpath::test::binary()));
}

TEST_CASE("cli: cost reproduces docs/design.md §6 as JSON") {
  struct row {
    const char* model;
    int context;
    double ratio;
  };
  for (auto [model, context, ratio] :
       {row{"deepseek-v3.2", 16384, 12.2}, row{"deepseek-v3.2", 32721, 21.6}, row{"deepseek-v3.2", 65536, 35.1},
        row{"qwen2.5-32b", 16384, 115.8}, row{"qwen2.5-32b", 65536, 265.4}}) {
    const auto j = parse_ok(run_cli(std::string("cost --model ") + model + " --context " + std::to_string(context) +
                                    " --append 429 --json"));
    CHECK(j["model"] == model);
    CHECK(j["ratio_gb_per_pflop"].get<double>() == doctest::Approx(ratio).epsilon(0.02));
    CHECK(j["flops_per_token"].get<double>() > 0);
  }
  const auto j = parse_ok(run_cli("cost --model qwen2.5-32b --json"));
  CHECK(j["kv_bytes_per_token"] == 262144);
  const auto bad = run_cli("cost --model gpt-7");
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("unknown model 'gpt-7'") != std::string::npos);
  CHECK(run_cli("cost --append 0").rc == 2);
}

TEST_CASE("cli: bounds gives 1/7 and 7/2 and checks a layout") {
  const auto j =
      parse_ok(run_cli("bounds --gpus-per-node 8 --snic-ratio 1 --cnic-gb-per-s 50 --dram-gb-per-s 500 --json"));
  CHECK(j["pd_min"].get<double>() == doctest::Approx(1.0 / 7));
  CHECK(j["pd_max"].get<double>() == doctest::Approx(3.5));
  CHECK(j["binding"] == json({"pe_cnic_write", "de_cnic_write", "de_dram"}));
  CHECK(j["constraints"].size() == 6);
  CHECK_FALSE(j.contains("feasible"));
  const auto in = parse_ok(run_cli("bounds -g 8 -s 1 -B 50 -M 500 --prefill-nodes 2 --decode-nodes 4 --json"));
  CHECK(in["feasible"] == true);
  CHECK(in["constraints"][5]["headroom"].get<double>() == doctest::Approx(0.6));
  const auto out = parse_ok(run_cli("bounds -g 8 -s 1 -B 50 -M 500 -P 4 -D 1 --json"));
  CHECK(out["feasible"] == false);
  const auto text = run_cli("bounds -g 8 -s 1 -B 50 -M 500");
  CHECK(text.rc == 0);
  CHECK(text.out.find("1/7 <= P/D <= 7/2") != std::string::npos);
}

TEST_CASE("cli: bounds refuses infeasible and non-positive inputs with exit code 2") {
  const auto s = run_cli("bounds -g 8 -s 5 -B 50 -M 500");
  CHECK(s.rc == 2);
  CHECK(s.err.find("exceeds g/2") != std::string::npos);
  CHECK(s.out.empty());
  for (const char* args : {"-g 0 -s 1 -B 50 -M 500", "-g 8 -s 0 -B 50 -M 500", "-g 8 -s 1 -B -50 -M 500",
                           "-g 8 -s 1 -B 50 -M 0", "-g 8 -s 1 -B 50 -M 500 -P 2", "-g 8 -s 1 -B 50 -M 50"}) {
    INFO(args);
    const auto r = run_cli(std::string("bounds ") + args);
    CHECK(r.rc == 2);
    CHECK(r.err.rfind("dualpath: ", 0) == 0);
  }
}

TEST_CASE("cli: models lists the catalog") {
  const auto text = run_cli("models");
  CHECK(text.rc == 0);
  CHECK(text.out.find("deepseek-v3.2") != std::string::npos);
  const auto j = parse_ok(run_cli("models --json"));
  REQUIRE(j.is_array());
  CHECK(j[0]["name"] == "deepseek-v3.2");
  CHECK(j[0]["kv_bytes_per_token"] == 40016);
}

TEST_CASE("cli: trace gen is reproducible and trace stats reads both formats") {
  dualpath::test::scratch_dir dir;
  const auto a = dir.file("a.jsonl"), b = dir.file("b.jsonl");
  REQUIRE(run_cli("trace gen --preset 64k --agents 30 --seed 5 -o '" + a + "'").rc == 0);
  REQUIRE(run_cli("trace gen --preset 64k --agents 30 --seed 5 -o '" + b + "'").rc == 0);
  CHECK(dualpath::test::read_text(a) == dualpath::test::read_text(b));
  const auto s = parse_ok(run_cli("trace stats '" + a + "' --json"));
  CHECK(s["agents"] == 30);
  for (const char* field : {"turns_mean", "append_mean", "gen_mean", "context_mean", "context_max", "hit_rate"}) {
    INFO(field);
    CHECK(s.contains(field));
  }
  CHECK(s["hit_rate"].get<double>() > 0.9);
  const auto m = parse_ok(run_cli("trace stats '" + dualpath::test::data_file("mooncake_small.jsonl") + "' --json"));
  CHECK(m["format"] == "mooncake");
  CHECK(m["requests"] == 8);
  CHECK(m["reuse_rate"].get<double>() == doctest::Approx(14.0 / 26));
}

TEST_CASE("cli: trace errors exit 2 with file, line and field") {
  dualpath::test::scratch_dir dir;
  const auto bad = dir.file("bad.jsonl");
  dualpath::test::write_text(
      bad, "{\"id\":\"a\",\"rounds\":[{\"append\":1,\"gen\":1}]}\n{\"id\":\"b\",\"rounds\":[{\"append\":1}]}\n");
  const auto r = run_cli("trace stats '" + bad + "'");
  CHECK(r.rc == 2);
  CHECK(r.err.find(bad + ":2: field 'rounds[0].gen': missing") != std::string::npos);
  CHECK(run_cli("trace stats '" + dir.file("missing.jsonl") + "'").rc == 2);
  CHECK(run_cli("trace gen --preset 99k -o '" + dir.file("x.jsonl") + "'").rc == 2);
  CHECK(run_cli("trace gen --preset 64k --agents 0 -o '" + dir.file("x.jsonl") + "'").rc == 2);
  CHECK(run_cli("trace gen --preset 64k").rc == 2);  // -o is required
  CHECK(run_cli("trace gen --preset 64k -o /nonexistent-dir/x.jsonl").rc == 2);
  const auto zero = run_cli("trace gen --preset 64k --scale 0 -o '" + dir.file("x.jsonl") + "'");
  CHECK(zero.rc == 2);
  CHECK(zero.err.find("--scale must be a positive number") != std::string::npos);
  const auto scaled = run_cli("trace gen --preset 64k --agents 20 --scale 16 -o '" + dir.file("s.jsonl") + "'");
  CHECK(scaled.rc == 0);
  CHECK(scaled.out.find("hit rate 98.") != std::string::npos);
}
