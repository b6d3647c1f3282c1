// SNIC balance per 1 s window and the working set (docs/design.md §15), from hand-made samples and records.
#include <doctest/doctest.h>

#include "report/run_report.hpp"
#include "report/snic_over_time.hpp"
#include "report/working_set.hpp"
#include "tests/report/turn_records.hpp"

using namespace dualpath::report;

TEST_CASE("snic_over_time: per-window read rates and read_q, their max/avg, and the mean over the run") {
  // Node 0 reads 1 GB in [0, 1) and 3 GB in [1, 2); node 1 reads 1 GB in each. Samples every 0.5 s; one
  // sample before the run started (bytes read then are not the run's).
  const std::vector<std::vector<snic_series_sample>> nodes{
      {{-0.5, 7'000'000'000, 0},
       {0.0, 7'000'000'000, 2'000'000},
       {0.5, 7'500'000'000, 2'000'000},
       {1.0, 8'000'000'000, 6'000'000},
       {1.5, 9'500'000'000, 6'000'000},
       {2.0, 11'000'000'000, 0}},
      {{0.0, 0, 2'000'000},
       {0.5, 500'000'000, 2'000'000},
       {1.0, 1'000'000'000, 2'000'000},
       {1.5, 1'500'000'000, 2'000'000},
       {2.0, 2'000'000'000, 0}},
  };
  const auto t = snic_windows(nodes, 2.5);
  REQUIRE(t.windows.size() == 3);  // [0,1), [1,2), [2,2.5)
  CHECK(t.windows[0].t_s == 0);
  CHECK(t.windows[0].read_gb_per_s[0] == doctest::Approx(1.0));
  CHECK(t.windows[0].read_gb_per_s[1] == doctest::Approx(1.0));
  CHECK(t.windows[0].rate_max_over_avg == doctest::Approx(1.0));
  CHECK(t.windows[1].read_gb_per_s[0] == doctest::Approx(3.0));
  CHECK(t.windows[1].read_gb_per_s[1] == doctest::Approx(1.0));
  CHECK(t.windows[1].rate_max_over_avg == doctest::Approx(1.5));  // 3 / mean(3, 1)
  CHECK(t.windows[1].read_q_mb[0] == doctest::Approx(6.0));
  CHECK(t.windows[1].read_q_mb[1] == doctest::Approx(2.0));
  CHECK(t.windows[1].read_q_max_over_avg == doctest::Approx(1.5));
  // The last window reads nothing (the final samples are at 2.0): no rate ratio, and it does not count.
  CHECK(t.windows[2].read_gb_per_s[0] == 0);
  CHECK(t.windows[2].rate_max_over_avg == 0);
  CHECK(t.rate_windows == 2);
  CHECK(t.rate_max_over_avg_mean == doctest::Approx((1.0 + 1.5) / 2));
  CHECK(t.read_q_windows == 2);  // the last window's read_q is 0 everywhere
  CHECK(t.read_q_max_over_avg_mean == doctest::Approx((1.0 + 1.5) / 2));
  const auto j = to_json(t);
  CHECK(j["windows"].size() == 3);
  CHECK(j["window_s"].get<double>() == 1.0);
}

TEST_CASE("snic_over_time: one node doing every read shows P+D, a window without samples keeps the last read_q") {
  const std::vector<std::vector<snic_series_sample>> nodes{
      {{0.0, 0, 4'000'000}, {2.0, 4'000'000'000, 0}},
      {{0.0, 0, 0}},
      {{0.0, 0, 0}},
      {{0.0, 0, 0}},
  };
  const auto t = snic_windows(nodes, 2.0);
  REQUIRE(t.windows.size() == 2);
  // Between samples the bytes stay at the earlier one's: the 4 GB land at t = 2.0, in the second window.
  CHECK(t.windows[0].read_gb_per_s[0] == 0);
  CHECK(t.windows[1].read_gb_per_s[0] == doctest::Approx(4.0));
  CHECK(t.windows[1].rate_max_over_avg == doctest::Approx(4.0));  // = P + D
  CHECK(t.windows[1].read_q_mb[0] == doctest::Approx(4.0));       // no sample in [1, 2): the one at 0 holds
  CHECK(snic_windows({}, 2.0).windows.empty());
  CHECK(snic_windows(nodes, 0).windows.empty());
}

TEST_CASE("working set: λ·T̄·len/2 from the run's agents") {
  std::vector<turn_record> recs;
  auto add = [&](uint32_t agent, uint32_t turn, uint32_t prompt, uint32_t gen, double start, double done,
                 const char* error = "") {
    recs.push_back(dualpath::test::finished_turn(agent, turn, start, done, prompt, gen, error));
  };
  add(0, 0, 1000, 100, 0, 2);
  add(0, 1, 3000, 200, 2, 4);   // agent 0 ends at 3200 tokens of context
  add(1, 1, 5000, 800, 5, 10);  // agent 1's last answered turn (turn order, not record order)
  add(1, 0, 2000, 100, 0, 5);
  add(1, 2, 9000, 100, 10, 10, "failed");  // failed turns do not count
  run_summary s;
  summarize_turns(s, recs);
  REQUIRE(s.jct_s == doctest::Approx(10));
  REQUIRE(s.agent_jct_mean_s == doctest::Approx((4 + 10) / 2.0));
  set_working_set(s, recs, /*KV bytes per token*/ 1000);
  CHECK(s.ws_lambda_per_s == doctest::Approx(2 / 10.0));  // 2 agents over a 10 s run
  CHECK(s.ws_t_bar_s == doctest::Approx(7.0));
  CHECK(s.ws_len_tokens == doctest::Approx((3200 + 5800) / 2.0));
  CHECK(s.ws_tokens == doctest::Approx(0.2 * 7.0 * 4500 / 2));
  CHECK(s.ws_bytes == doctest::Approx(0.2 * 7.0 * 4500 / 2 * 1000));
  const auto j = to_json(s);
  CHECK(j["working_set"]["tokens"].get<double>() == doctest::Approx(3150));
  CHECK(j.contains("snic_over_time"));
  CHECK(j.contains("store_read_bytes"));
}
