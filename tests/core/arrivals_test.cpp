// Online arrivals (core/arrivals.hpp): the profile's parser and the piecewise Poisson clock.
#include <doctest/doctest.h>

#include <random>

#include "core/arrivals.hpp"

using namespace dualpath;

TEST_CASE("an aps profile parses in increasing time from 0, and each bad entry is named") {
  const auto p = parse_aps_profile("0:0.2,600:0.8,1200:0.2");
  REQUIRE(p.ok());
  REQUIRE(p->size() == 3);
  CHECK(p.value()[1].from_s == 600);
  CHECK(p.value()[1].aps == doctest::Approx(0.8));
  for (const char* bad : {"", "0.2", "5:0.2", "0:0", "0:-1", "0:0.2,0:0.3", "0:0.2,10:x", "0:0.2,-5:1", "0:0.2,"}) {
    const auto r = parse_aps_profile(bad);
    CHECK_MESSAGE(!r.ok(), std::string(bad));
    if (!r.ok()) {
      CHECK(r.error().code() == errc::bad_input);
      CHECK(r.error().message().find("--aps-profile") == 0);
    }
  }
}

TEST_CASE("one step is the plain Poisson process, draw for draw") {
  arrival_clock clock({{0, 0.5}}, 42);
  std::mt19937_64 rng(42);
  double t = 0;
  CHECK(clock.next() == 0);
  for (int i = 0; i < 100; ++i) {
    std::exponential_distribution<double> gap(0.5);
    t += gap(rng);
    CHECK(clock.next() == t);
  }
}

TEST_CASE("arrivals follow a rate that rises and falls") {
  // 100 s at 1/s, 100 s at 10/s, 100 s at 1/s: about 100, 1000 and 100 arrivals.
  arrival_clock clock({{0, 1}, {100, 10}, {200, 1}}, 7);
  int counts[3] = {0, 0, 0};
  double last = -1;
  for (;;) {
    const double t = clock.next();
    CHECK(t >= last);
    last = t;
    if (t >= 300) break;
    ++counts[int(t / 100)];
  }
  CHECK(counts[0] > 70);
  CHECK(counts[0] < 135);
  CHECK(counts[1] > 900);
  CHECK(counts[1] < 1100);
  CHECK(counts[2] > 70);
  CHECK(counts[2] < 135);
}
