// docs/design.md §15: a run's report carries its time series: per window, each engine's load as the
// scheduler saw it and the turns that finished, by path, with their TTFT.
#include <doctest/doctest.h>

#include <algorithm>

#include "cluster/cluster.hpp"
#include "report/run_report.hpp"
#include "runtime_fixtures.hpp"

using namespace runtime_fixtures;  // with dualpath, dualpath::cluster and fs

TEST_CASE("load_over_time: every turn of a run in a window, the paths add up, the engines were seen loaded") {
  test::scratch_dir dir;
  run_options o;
  o.config = small_cluster(dir.path, 2);
  o.policy = "dualpath";
  o.scripts = scripts(6, 8, 0);  // a second or two: the scheduler is sampled every 0.1 s
  o.series_window_s = 0.2;
  const auto s = run_cluster(o);
  const auto& t = s.load_time;
  CHECK(t.window_s == 0.2);
  REQUIRE(!t.windows.empty());
  CHECK(t.windows.size() == size_t(std::ceil(s.jct_s / 0.2 - 1e-9)));
  MESSAGE(t.windows.size(), " windows over ", s.jct_s, " s");
  const uint32_t engines = (o.config.prefill_nodes + o.config.decode_nodes) * o.config.engines_per_node;
  CHECK(t.engines == engines);
  CHECK(t.prefill[0]);
  CHECK_FALSE(t.prefill[engines - 1]);
  uint64_t turns = 0, pe = 0, de = 0, split = 0;
  double peak_tok = 0;
  for (const auto& w : t.windows) {
    turns += w.turns;
    pe += w.path_pe, de += w.path_de, split += w.path_split;
    for (double x : w.tok) peak_tok = std::max(peak_tok, x);
    if (w.turns > 0) CHECK(w.ttft_max_s >= w.ttft_mean_s);
  }
  CHECK(turns == s.turns);
  CHECK(t.turns.size() == s.turns);
  CHECK(pe == s.path_pe);
  CHECK(de == s.path_de);
  CHECK(split == s.path_split);
  CHECK(peak_tok > 0);  // some engine had tokens to process in some window
  const auto j = to_json(s);
  CHECK(j["load_over_time"]["windows"].size() == t.windows.size());
  CHECK(j["snic_over_time"]["window_s"] == 0.2);
}
