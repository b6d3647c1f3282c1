// Online capacity from an APS sweep: pure functions over run summaries.
#include <doctest/doctest.h>

#include "report/run_report.hpp"
#include "tests/report/turn_records.hpp"

using namespace dualpath::report;

namespace {

sweep_point point(double aps, double ttft_peak, double tpot_mean, uint64_t failed = 0) {
  sweep_point p;
  p.aps = aps;
  p.run.turns = 10;
  p.run.failed_turns = failed;
  p.run.ttft_peak_window_s = ttft_peak;
  p.run.tpot.mean = tpot_mean;
  return p;
}

}  // namespace

TEST_CASE("capacity is the highest APS at which the SLO and every lower APS held") {
  const serving_slo slo{4.0, 0.05};
  // Given out of order; 3.0 meets again by chance but 2.0 did not, so capacity stops at 1.5.
  std::vector<sweep_point> pts{point(2.0, 4.5, 0.01), point(0.5, 1.0, 0.01), point(3.0, 3.9, 0.01),
                               point(1.5, 3.99, 0.01), point(1.0, 2.0, 0.01)};
  CHECK(capacity_aps(pts, slo) == doctest::Approx(1.5));
  CHECK(capacity_aps({point(0.5, 5.0, 0.01)}, slo) == 0);
  CHECK(capacity_aps({point(0.5, 1.0, 0.06)}, slo) == 0);     // TPOT over its bound
  CHECK(capacity_aps({point(0.5, 1.0, 0.01, 1)}, slo) == 0);  // a failed turn never meets the SLO
  CHECK(capacity_aps({point(0.5, 1.0, 0.01), point(1.0, 1.0, 0.01)}, serving_slo{0.5, 0.05}) == 0);

  aps_sweep sweep;
  sweep["basic"] = {point(1.0, 2.0, 0.01), point(2.0, 6.0, 0.01)};
  sweep["dualpath"] = {point(1.0, 1.0, 0.01), point(2.0, 2.0, 0.01), point(3.0, 9.0, 0.01)};
  sweep["dualpath"][1].run.policy = "dualpath";
  const auto j = sweep_json(sweep, slo);
  CHECK(j["policies"]["basic"]["capacity_aps"].get<double>() == doctest::Approx(1.0));
  CHECK(j["policies"]["dualpath"]["capacity_aps"].get<double>() == doctest::Approx(2.0));
  CHECK(j["capacity_ratio"]["dualpath_vs_basic"].get<double>() == doctest::Approx(2.0));
  CHECK(j["policies"]["dualpath"]["points"][2]["meets_slo"].get<bool>() == false);
  const std::string table = sweep_table(sweep, slo);
  CHECK(table.find("capacity dualpath_vs_basic = 2.00") != std::string::npos);
}

TEST_CASE("the peak 10-second TTFT shows a backlog that the whole-run mean hides") {
  std::vector<turn_record> records;
  auto add = [&](double done, double ttft) {
    turn_record r;
    r.done_s = done;
    r.ttft_s = ttft;
    records.push_back(r);
  };
  for (int i = 0; i < 100; ++i) add(i * 0.5, 0.5);       // 50 s of quick turns
  for (int i = 0; i < 20; ++i) add(50 + i * 0.5, 9.0);   // then 10 s of a backlog
  for (int i = 0; i < 100; ++i) add(60 + i * 0.5, 0.5);  // drained
  turn_record failed;
  failed.done_s = 55;
  failed.ttft_s = 100;
  failed.error = "x";  // failed turns do not count
  records.push_back(failed);
  run_summary s;
  summarize_turns(s, records);
  CHECK(s.ttft.mean < 1.5);
  CHECK(s.ttft_peak_window_s > 8.0);
  CHECK(s.ttft_peak_window_s <= 9.0);
  CHECK(peak_window_mean_ttft(records, 10.0, 1000) == 0);  // no window holds that many turns
}

TEST_CASE("the paper's metrics: TTST from submission, Prompt TPS over every prompt token, mean agent JCT") {
  auto rec = [](uint32_t agent, double start, double done, uint32_t prompt) {
    turn_record r = dualpath::test::finished_turn(agent, 0, start, done, prompt);
    r.has_ttst = true;
    r.ttst_s = done - start;
    r.second_token_gap_s = 0.25;
    return r;
  };
  // Agent 0: turns over [0, 4] and [4, 10]; agent 1: one turn over [1, 3]; a failed turn counts for nothing.
  std::vector<turn_record> records{rec(0, 0, 4, 1000), rec(0, 4, 10, 1500), rec(1, 1, 3, 500)};
  turn_record failed = rec(2, 0, 20, 9999);
  failed.error = "injected";
  records.push_back(failed);
  run_summary s;
  summarize_turns(s, records);
  CHECK(s.turns == 3);
  CHECK(s.prompt_tps == doctest::Approx(3000.0 / 20.0));  // the JCT includes the failed turn's end
  CHECK(s.agent_jct_mean_s == doctest::Approx((10.0 + 2.0) / 2.0));
  CHECK(s.ttst.mean == doctest::Approx((4.0 + 6.0 + 2.0) / 3.0));
  CHECK(s.second_token_gap.mean == doctest::Approx(0.25));
  const auto j = to_json(s);
  CHECK(j["prompt_tps"].get<double>() == doctest::Approx(150.0));
  CHECK(j.contains("second_token_gap_s"));
  CHECK(j.contains("agent_jct_mean_s"));
}

TEST_CASE("after the first token: hand-off, HBM load and write-back wait come from the stamps") {
  turn_facts f;
  f.generated_tokens = 4;
  turn_stamps t;
  t.submitted = 1.0;
  t.first_token = 1.5;
  t.handoff = 1.52;
  t.in_hbm = 1.6;
  t.second_token = 1.7;
  t.last_token = 1.9;
  t.done = 2.2;
  const turn_record r = make_turn_record(f, t);
  CHECK(r.handoff_s == doctest::Approx(0.02));
  CHECK(r.hbm_load_s == doctest::Approx(0.08));
  CHECK(r.write_back_s == doctest::Approx(0.3));
  // A turn that never reached the decode engine (refused, or failed in prefill) has none of them.
  turn_stamps refused;
  refused.submitted = 1.0;
  refused.done = 1.1;
  const turn_record n = make_turn_record(f, refused);
  CHECK(n.handoff_s == 0);
  CHECK(n.hbm_load_s == 0);
  CHECK(n.write_back_s == 0);
  run_summary s;
  summarize_turns(s, {r, r});
  CHECK(s.hbm_load.mean == doctest::Approx(0.08));
  const auto j = to_json(s);
  CHECK(j["handoff_breakdown_s"]["write_back"]["p50"].get<double>() == doctest::Approx(0.3));
}
