// Engine load and finished turns per window (docs/design.md §15), from hand-made samples and records.
#include <doctest/doctest.h>

#include "report/load_series.hpp"
#include "report/run_report.hpp"

using namespace dualpath::report;
using dualpath::schedule::read_path;

namespace {

turn_record finished(double done_s, double ttft_s, read_path path) {
  turn_record r;
  r.done_s = done_s;
  r.ttft_s = ttft_s;
  r.path = path;
  return r;
}

}  // namespace

TEST_CASE("load_over_time: per-window engine means, turns by path, TTFT mean and max; outside samples dropped") {
  // Engine 0 (prefill) sampled twice in [0, 1) and once in [1, 2); engine 2 (decode) only in [1, 2); one
  // sample before the run and one after its end say nothing.
  const std::vector<engine_load_sample> samples{{-0.2, 0, true, 999, 9},  {0.1, 0, true, 100, 1},
                                                {0.6, 0, true, 300, 3},   {1.2, 0, true, 50, 1},
                                                {1.5, 2, false, 4000, 4}, {2.6, 2, false, 1, 1}};
  const std::vector<turn_record> turns{finished(0.5, 0.2, read_path::pe), finished(0.9, 0.4, read_path::de),
                                       finished(1.0, 1.0, read_path::split), finished(2.5, 0.3, read_path::de),
                                       finished(3.0, 9.0, read_path::pe)};
  const auto t = load_windows(samples, turns, 2.5);
  CHECK(t.engines == 3);
  CHECK(t.prefill == std::vector<bool>{true, true, false});  // engine 1 never sampled
  REQUIRE(t.windows.size() == 3);                            // [0,1), [1,2), [2,2.5]
  const auto& w0 = t.windows[0];
  CHECK(w0.tok[0] == doctest::Approx(200));  // mean of 100 and 300; the sample at -0.2 is not the run's
  CHECK(w0.seq[0] == doctest::Approx(2));
  CHECK(w0.tok[2] == 0);
  CHECK(w0.turns == 2);
  CHECK(w0.path_pe == 1);
  CHECK(w0.path_de == 1);
  CHECK(w0.ttft_mean_s == doctest::Approx(0.3));
  CHECK(w0.ttft_max_s == doctest::Approx(0.4));
  const auto& w1 = t.windows[1];
  CHECK(w1.t_s == 1.0);
  CHECK(w1.tok[0] == doctest::Approx(50));
  CHECK(w1.tok[2] == doctest::Approx(4000));
  CHECK(w1.turns == 1);  // the turn at 1.0 starts the second window
  CHECK(w1.path_split == 1);
  CHECK(t.windows[2].turns == 1);   // done at end_s: the last window; the one at 3.0 is outside
  CHECK(t.windows[2].tok[2] == 0);  // the sample at 2.6 is after the end
  CHECK(t.turns.size() == 4);

  const auto j = to_json(t);
  CHECK(j["window_s"] == 1.0);
  CHECK(j["engines"][2] == "decode");
  CHECK(j["windows"][1]["tok"][2] == 4000.0);
  CHECK(j["windows"][0]["paths"]["de"] == 1);
  CHECK(j["turns"][2][2] == "split");
}

TEST_CASE("load_over_time: a configurable window, and nothing for an empty run") {
  const std::vector<engine_load_sample> samples{{0.1, 1, false, 10, 1}, {0.3, 1, false, 30, 3}};
  const auto t = load_windows(samples, {finished(0.45, 0.1, read_path::pe)}, 0.5, 0.25);
  REQUIRE(t.windows.size() == 2);
  CHECK(t.windows[0].tok[1] == doctest::Approx(10));
  CHECK(t.windows[1].tok[1] == doctest::Approx(30));
  CHECK(t.windows[1].turns == 1);
  CHECK(load_windows(samples, {}, 0).windows.empty());
  CHECK(load_windows({}, {}, 1.0).engines == 0);
}
