#include <doctest/doctest.h>

#include "core/status.hpp"
#include "core/trace.hpp"
#include "test_util.hpp"

using namespace dualpath;
using dualpath::test::scratch_dir;
using dualpath::test::write_text;

namespace {
// The user_error message of reading `text` as a trajectory file named f.jsonl.
std::string read_error(const std::string& text, std::string* path_out = nullptr) {
  scratch_dir dir;
  const auto path = dir.file("f.jsonl");
  if (path_out) *path_out = path;
  write_text(path, text);
  try {
    read_trajectories(path);
  } catch (const user_error& e) {
    std::string msg = e.what();
    const auto pos = msg.find(path);
    return pos == 0 ? "f.jsonl" + msg.substr(path.size()) : msg;
  }
  return "no error";
}
}  // namespace

TEST_CASE("turn shapes: prompt, hit candidates and append follow keep and reset") {
  const auto t = parse_trajectory_line(
      R"({"id":"a","rounds":[{"append":100,"gen":50,"keep":20},{"append":30,"gen":10,"tool_ms":7},)"
      R"({"append":5,"gen":5,"reset":120},{"append":1,"gen":1}]})",
      "x:1");
  const auto turns = t.turns();
  REQUIRE(turns.size() == 4);
  CHECK(turns[0].hit_candidates == 0);
  CHECK(turns[0].prompt == 100);
  CHECK(turns[0].append == 100);
  CHECK(turns[0].keep == 20);
  // Turn 1 carries turn 0's prompt and the 20 kept tokens of its 50 generated ones.
  CHECK(turns[1].hit_candidates == 120);
  CHECK(turns[1].prompt == 150);
  CHECK(turns[1].append == 30);
  CHECK(turns[1].keep == 10);  // keep defaults to gen
  CHECK(turns[1].tool_ms == 7);
  // Turn 2 starts from the context cut back to its first 120 tokens (160 before the cut).
  CHECK(turns[2].reset);
  CHECK(turns[2].hit_candidates == 120);
  CHECK(turns[2].prompt == 125);
  CHECK(turns[3].hit_candidates == 130);
  CHECK_FALSE(turns[3].reset);
  for (size_t r = 0; r < turns.size(); ++r) {
    CHECK(t.turn(r).prompt == turns[r].prompt);
    CHECK(t.turn(r).hit_candidates == turns[r].hit_candidates);
  }
  CHECK_THROWS_AS(t.turn(4), std::out_of_range);
}

TEST_CASE("without keep/reset a turn's prompt is every earlier prompt and generation plus append") {
  const auto t = parse_trajectory_line(
      R"({"id":7,"rounds":[{"append":10,"gen":3},{"append":4,"gen":2},{"append":1,"gen":1}]})", "x:1");
  CHECK(t.id == "7");
  CHECK(t.turn(2).prompt == 10 + 3 + 4 + 2 + 1);
  CHECK(t.turn(2).hit_candidates == 10 + 3 + 4 + 2);
}

TEST_CASE("writer and streaming reader round-trip, skipping blank lines") {
  scratch_dir dir;
  trajectory a{"a", {{10, 5, 2, 0, {}}, {3, 4, 4, 250, {}}, {2, 1, 1, 0, 11}}};
  trajectory b{"b", {{7, 7, 7, 0, {}}}};
  write_trajectories(dir.file("t.jsonl"), {a, b});
  CHECK(
      to_json_line(a) ==
      R"({"id":"a","rounds":[{"append":10,"gen":5,"keep":2},{"append":3,"gen":4,"tool_ms":250},{"append":2,"gen":1,"reset":11}]})");
  auto text = test::read_text(dir.file("t.jsonl"));
  write_text(dir.file("blank.jsonl"),
             "\n" + text.substr(0, text.find('\n') + 1) + "  \n" + text.substr(text.find('\n') + 1));
  trajectory_reader reader(dir.file("blank.jsonl"));
  trajectory t;
  REQUIRE(reader.next(t));
  CHECK(reader.line() == 2);
  CHECK(to_json_line(t) == to_json_line(a));
  REQUIRE(reader.next(t));
  CHECK(reader.line() == 4);
  CHECK(t.id == "b");
  CHECK_FALSE(reader.next(t));
}

TEST_CASE("malformed trajectory lines name file, line and field") {
  const std::string ok = R"({"id":"a","rounds":[{"append":1,"gen":1}]})";
  CHECK(read_error(ok + "\n" + ok + "\n{\"id\":\"c\",\"rounds\":[\n").rfind("f.jsonl:3: not valid JSON", 0) == 0);
  CHECK(read_error(ok + "\n" + R"({"id":"b","rounds":[{"append":1,"gen":1},{"append":2}]})") ==
        "f.jsonl:2: field 'rounds[1].gen': missing");
  CHECK(read_error(R"({"id":"b","rounds":[{"append":-4,"gen":1}]})") ==
        "f.jsonl:1: field 'rounds[0].append': must not be negative (got -4)");
  CHECK(read_error(R"({"id":"b","rounds":[{"append":4,"gen":"many"}]})") ==
        "f.jsonl:1: field 'rounds[0].gen': expected a non-negative integer, got \"many\"");
  CHECK(read_error(R"({"id":"b","rounds":[{"append":4,"gen":3,"keep":5}]})") ==
        "f.jsonl:1: field 'rounds[0].keep': keeps 5 of only 3 generated tokens");
  CHECK(read_error(R"({"id":"b","rounds":[{"append":4,"gen":3},{"append":1,"gen":1,"reset":9}]})") ==
        "f.jsonl:1: field 'rounds[1].reset': cuts back to 9 tokens but the context has only 7");
  CHECK(read_error(R"({"id":"b","rounds":[{"append":4,"gen":3,"gne":1}]})") ==
        "f.jsonl:1: field 'rounds[0].gne': unknown field");
  CHECK(read_error(R"({"id":"b","rounds":[]})") == "f.jsonl:1: field 'rounds': a trajectory needs at least one round");
  CHECK(read_error(R"({"rounds":[{"append":1,"gen":1}]})") == "f.jsonl:1: field 'id': missing");
  CHECK(read_error("[1,2]") == "f.jsonl:1: expected a JSON object, got array");
  CHECK(read_error(R"({"id":"b","rounds":[{"append":0,"gen":3}]})") ==
        "f.jsonl:1: field 'rounds[0].append': the first prompt is empty");
  CHECK_THROWS_AS(trajectory_reader("/nonexistent/dir/t.jsonl"), user_error);
}

TEST_CASE("trajectory statistics") {
  trajectory_stats_builder b;
  b.add(trajectory{"a", {{100, 50, 20, 0, {}}, {30, 10, 10, 0, {}}}});  // prompts 100, 150; hits 0, 120
  b.add(trajectory{"b", {{60, 10, 10, 0, {}}}});                        // prompt 60
  const auto s = b.result();
  CHECK(s.agents == 2);
  CHECK(s.turns == 3);
  CHECK(s.turns_mean == doctest::Approx(1.5));
  CHECK(s.turns_max == 2);
  CHECK(s.append_mean == doctest::Approx((100 + 30 + 60) / 3.0));
  CHECK(s.gen_mean == doctest::Approx(70 / 3.0));
  CHECK(s.context_mean == doctest::Approx(120 / 3.0));
  CHECK(s.context_max == 120);
  CHECK(s.prompt_max == 150);
  CHECK(s.final_mean == doctest::Approx((150 + 60) / 2.0));
  CHECK(s.hit_rate == doctest::Approx(120.0 / 310));
}

TEST_CASE("Mooncake traces: detection, parsing and prefix reuse") {
  const auto path = test::data_file("mooncake_small.jsonl");
  CHECK(detect_trace_format(path) == trace_format::mooncake);
  mooncake_reader reader(path);
  mooncake_stats_builder b;
  mooncake_request r;
  size_t n = 0;
  while (reader.next(r)) {
    if (n++ == 1) {
      CHECK(r.timestamp_ms == 500);
      CHECK(r.input_length == 2560);
      CHECK(r.hash_ids == std::vector<uint64_t>{1, 2, 3, 4, 5});
    }
    b.add(r);
  }
  CHECK(reader.line() == 9);  // one blank line skipped
  const auto s = b.result();
  CHECK(s.requests == 8);
  CHECK(s.blocks == 26);
  CHECK(s.reused_blocks == 14);
  CHECK(s.reuse_rate == doctest::Approx(14.0 / 26));
  CHECK(s.input_mean == doctest::Approx(1560));
  CHECK(s.input_max == 3000);
  CHECK(s.duration_s == doctest::Approx(4.1));

  scratch_dir dir;
  write_trajectories(dir.file("t.jsonl"), {trajectory{"a", {{1, 1, 1, 0, {}}}}});
  CHECK(detect_trace_format(dir.file("t.jsonl")) == trace_format::trajectory);
  write_text(dir.file("other.jsonl"), "\n{\"prompt\": \"hi\"}\n");
  CHECK_THROWS_WITH_AS(detect_trace_format(dir.file("other.jsonl")),
                       doctest::Contains("other.jsonl:2: neither a trajectory"), user_error);
  write_text(dir.file("bad.jsonl"),
             R"({"timestamp": 1, "input_length": 600, "output_length": 1, "hash_ids": [1, 2, 3]})");
  CHECK_THROWS_WITH_AS(mooncake_reader(dir.file("bad.jsonl")).next(r),
                       doctest::Contains("bad.jsonl:1: field 'hash_ids'"), user_error);
  write_text(dir.file("bad2.jsonl"),
             R"({"timestamp": 1, "input_length": 600, "output_length": 1, "hash_ids": [1, -2]})");
  CHECK_THROWS_WITH_AS(mooncake_reader(dir.file("bad2.jsonl")).next(r),
                       doctest::Contains("bad2.jsonl:1: field 'hash_ids[1]'"), user_error);
}

TEST_CASE("the mean turn of a workload averages hit candidates and appends over every turn") {
  trajectory t;
  t.id = "a";
  t.rounds = {{100, 10, 10, 0, {}}, {50, 10, 10, 0, {}}, {30, 10, 10, 0, {}}};
  mean_turn m;
  for (const auto& s : t.turns()) m.add(s);
  CHECK(m.turns == 3);
  // Hit candidates: 0, 110, 170 (the previous prompt plus its kept output).
  CHECK(m.hit == doctest::Approx((0.0 + 110.0 + 170.0) / 3.0));
  CHECK(m.append == doctest::Approx((100.0 + 50.0 + 30.0) / 3.0));
}
