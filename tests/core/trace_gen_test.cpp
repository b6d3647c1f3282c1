#include <doctest/doctest.h>

#include "core/errors.hpp"
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
