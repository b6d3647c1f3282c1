#include <doctest/doctest.h>

#include "core/status.hpp"
#include "core/trace.hpp"
#include "test_util.hpp"

using namespace dualpath;

namespace {
trajectory_stats stats_of(const std::vector<trajectory>& agents) {
  trajectory_stats_builder b;
  for (const auto& t : agents) b.add(t);
  return b.result();
}
}  // namespace

TEST_CASE("64k preset over 500 agents reproduces the paper's dataset statistics") {
  const auto& preset = find_trace_preset("64k");
  for (uint64_t seed : {1, 2}) {
    INFO("seed " << seed);
    const auto s = stats_of(generate_trajectories(preset, 500, seed));
    CHECK(s.agents == 500);
    CHECK(s.turns_mean == doctest::Approx(157).epsilon(0.05));
    CHECK(s.append_mean == doctest::Approx(429).epsilon(0.05));
    CHECK(s.gen_mean == doctest::Approx(176).epsilon(0.05));
    CHECK(s.context_mean == doctest::Approx(32721).epsilon(0.10));
    CHECK(s.hit_rate >= 0.98);
    CHECK(s.prompt_max <= 65536);
  }
}

TEST_CASE("32k and 48k presets keep their window and mean turns and appends") {
  for (const char* name : {"32k", "48k"}) {
    const auto& p = find_trace_preset(name);
    INFO(name);
    const auto s = stats_of(generate_trajectories(p, 300, 3));
    CHECK(s.turns_mean == doctest::Approx(p.turns_mean).epsilon(0.05));
    CHECK(s.append_mean == doctest::Approx(p.append_mean).epsilon(0.05));
    CHECK(s.prompt_max <= p.max_len);
  }
}

TEST_CASE("the same seed gives the same file, another seed another") {
  test::scratch_dir dir;
  const auto& p = find_trace_preset("64k");
  write_trajectories(dir.file("a.jsonl"), generate_trajectories(p, 40, 9));
  write_trajectories(dir.file("b.jsonl"), generate_trajectories(p, 40, 9));
  write_trajectories(dir.file("c.jsonl"), generate_trajectories(p, 40, 10));
  CHECK(test::read_text(dir.file("a.jsonl")) == test::read_text(dir.file("b.jsonl")));
  CHECK(test::read_text(dir.file("a.jsonl")) != test::read_text(dir.file("c.jsonl")));
  // Agent i does not depend on how many agents are generated.
  CHECK(to_json_line(generate_trajectories(p, 5, 9)[3]) == to_json_line(generate_trajectories(p, 40, 9)[3]));
  // Generated files read back to the same trajectories.
  const auto back = read_trajectories(dir.file("a.jsonl"));
  REQUIRE(back.size() == 40);
  CHECK(to_json_line(back[17]) == to_json_line(generate_trajectories(p, 40, 9)[17]));
}

TEST_CASE("generated trajectories use keep and reset consistently") {
  const auto agents = generate_trajectories(find_trace_preset("64k"), 50, 4);
  uint64_t resets = 0, dropped_reasoning = 0;
  for (const auto& t : agents) {
    // Round-tripping through the strict parser validates every keep and reset against its context.
    CHECK_NOTHROW(parse_trajectory_line(to_json_line(t), "gen"));
    for (const auto& turn : t.turns()) {
      resets += turn.reset;
      dropped_reasoning += turn.gen - turn.keep;
      CHECK(turn.keep <= turn.gen);
    }
  }
  CHECK(resets > 0);
  CHECK(dropped_reasoning > 0);
}

TEST_CASE("unknown presets and zero agents are user errors") {
  CHECK_THROWS_WITH_AS(find_trace_preset("128k"), doctest::Contains("32k, 48k, 64k"), user_error);
  CHECK_THROWS_AS(generate_trajectories(find_trace_preset("64k"), 0, 1), user_error);
}

TEST_CASE("trace scaling divides contexts by K and keeps every turn and the hit rate") {
  const auto agents = generate_trajectories(find_trace_preset("64k"), 200, 5);
  const auto full = stats_of(agents);
  std::vector<trajectory> small;
  for (const auto& t : agents) small.push_back(scale_trajectory(t, {16, 1, 1}));
  const auto s = stats_of(small);
  CHECK(s.turns == full.turns);
  CHECK(s.context_mean == doctest::Approx(full.context_mean / 16).epsilon(0.03));
  CHECK(s.append_mean == doctest::Approx(full.append_mean / 16).epsilon(0.05));
  CHECK(s.gen_mean == doctest::Approx(full.gen_mean / 16).epsilon(0.05));
  CHECK(s.hit_rate >= 0.97);
  CHECK(s.prompt_max <= 65536 / 16 + 64);
  // The sweeps: appends doubled, generations halved, on the scaled trace.
  std::vector<trajectory> swept;
  for (const auto& t : agents) swept.push_back(scale_trajectory(t, {16, 2, 0.5}));
  const auto w = stats_of(swept);
  CHECK(w.turns == full.turns);
  CHECK(w.append_mean == doctest::Approx(2 * s.append_mean).epsilon(0.05));
  CHECK(w.gen_mean == doctest::Approx(0.5 * s.gen_mean).epsilon(0.1));
}

TEST_CASE("trace scaling keeps resets inside the scaled context, and refuses non-positive factors") {
  trajectory t;
  t.id = "a";
  t.rounds = {{800, 160, 80, 0, {}}, {400, 160, 160, 0, {}}, {320, 80, 80, 0, uint64_t(900)}};
  const auto s = scale_trajectory(t, {8, 1, 1});
  REQUIRE(s.rounds.size() == 3);
  CHECK(s.rounds[0].append == 100);
  CHECK(s.rounds[0].keep == 10);
  REQUIRE(s.rounds[2].reset);
  const auto shapes = s.turns();
  CHECK(shapes[2].hit_candidates == *s.rounds[2].reset);
  CHECK(*s.rounds[2].reset <= shapes[1].prompt + s.rounds[1].keep);
  CHECK(*s.rounds[2].reset == doctest::Approx(900.0 / 8).epsilon(0.02));
  CHECK(check_trace_scale({0, 1, 1}).code() == errc::bad_input);
  CHECK(check_trace_scale({8, -1, 1}).message().find("--append-scale") != std::string::npos);
  CHECK(check_trace_scale({8, 1, 1}).ok());
}
