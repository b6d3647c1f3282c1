// core/pass_timeline.hpp: a run's passes summed up phase by phase, and the process log each run takes.
#include <doctest/doctest.h>

#include "core/pass_timeline.hpp"

using namespace dualpath::pass_timeline;

namespace {

pass_record pass(double admit, double wait, double compute, double drain, double finish, double worker) {
  pass_record r;
  r.ms = {admit, wait, compute, drain, finish};
  r.worker_ms = worker;
  return r;
}

}  // namespace

TEST_CASE("pass timeline: medians per phase and in all, and each phase's share of the summed time") {
  const auto s = summarize({pass(1, 10, 20, 4, 5, 18), pass(3, 30, 40, 2, 5, 35), pass(2, 20, 60, 8, 10, 50)});
  CHECK(s.passes == 3);
  CHECK(s.median_ms[size_t(phase::admit)] == 2);
  CHECK(s.median_ms[size_t(phase::wait_kv)] == 20);
  CHECK(s.median_ms[size_t(phase::compute)] == 40);
  CHECK(s.median_ms[size_t(phase::drain)] == 4);
  CHECK(s.median_ms[size_t(phase::finish)] == 5);
  CHECK(s.total_median_ms == 80);  // totals 40, 80, 100
  CHECK(s.worker_median_ms == 35);
  CHECK(s.share[size_t(phase::compute)] == doctest::Approx(120.0 / 220.0));
  double shares = 0;
  for (double x : s.share) shares += x;
  CHECK(shares == doctest::Approx(1.0));
  // An even count takes the mean of the two middle values.
  CHECK(summarize({pass(1, 0, 0, 0, 0, 0), pass(3, 0, 0, 0, 0, 0)}).median_ms[0] == 2);
  CHECK(summarize({}).passes == 0);
  CHECK(std::string(phase_name(phase::wait_kv)) == "wait_kv");
}

TEST_CASE("pass timeline: fetch round trips are medians over the passes that had such fetches") {
  auto with = [](double own, double other, double first) {
    pass_record r = pass(1, 1, 1, 1, 1, 1);
    r.fetches = {own, other, first};
    return r;
  };
  const auto s = summarize({with(0.5, -1, 0.5), with(0.7, 2.0, 3.0), with(-1, 1.0, 1.0), with(0.9, -1, -1)});
  CHECK(s.fetch_median_ms.own_ms == doctest::Approx(0.7));    // 0.5, 0.7, 0.9
  CHECK(s.fetch_median_ms.other_ms == doctest::Approx(1.5));  // 2.0 and 1.0
  CHECK(s.fetch_median_ms.first_ms == doctest::Approx(1.0));  // 0.5, 3.0, 1.0
  // No pass fetched: every figure is 0, not a negative one.
  const auto none = summarize({pass(1, 1, 1, 1, 1, 1)});
  CHECK(none.fetch_median_ms.own_ms == 0);
  CHECK(none.fetch_median_ms.other_ms == 0);
  CHECK(none.fetch_median_ms.first_ms == 0);
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({}) == 0);
}

TEST_CASE("pass timeline: a pass's fetch log gives medians by source and layer 0's slowest, -1 where none") {
  fetch_log f;
  CHECK(f.round_trips().own_ms == -1);
  CHECK(f.round_trips().other_ms == -1);
  CHECK(f.round_trips().first_ms == -1);
  f.add(true, 0, 0.4);
  f.add(false, 0, 1.2);  // layer 0 from another node too: the slower one counts
  f.add(true, 1, 0.2);
  f.add(true, 2, 0.3);
  const auto r = f.round_trips();
  CHECK(r.own_ms == doctest::Approx(0.3));
  CHECK(r.other_ms == doctest::Approx(1.2));
  CHECK(r.first_ms == doctest::Approx(1.2));
}

TEST_CASE("pass timeline: a run takes what was recorded since the last take") {
  log l;
  l.record(pass(1, 2, 3, 4, 5, 3));
  l.record(pass(1, 2, 3, 4, 5, 3));
  CHECK(l.take().size() == 2);
  CHECK(l.take().empty());
}

TEST_CASE("pass timeline: a long-lived process keeps a bounded, uniform sample of its passes") {
  log l;
  const size_t n = 3 * log::capacity;
  for (size_t i = 0; i < n; ++i) l.record(pass(double(i), 0, 0, 0, 0, 0));
  const auto kept = l.take();
  CHECK(kept.size() == log::capacity);
  // Uniform over all passes, not the first ones: the sample's median admit time is near the middle.
  const auto s = summarize(kept);
  CHECK(s.median_ms[size_t(phase::admit)] == doctest::Approx(double(n) / 2).epsilon(0.05));
}
