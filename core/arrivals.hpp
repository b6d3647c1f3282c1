#pragma once
// Online arrivals (docs/design.md §11): agents arrive as a Poisson process, at one rate (`--aps`) or at a rate
// that changes over the run (`--aps-profile`: a load that rises and falls).
#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace dualpath {

// From `from_s` on (until the next step), agents arrive at `aps` per second.
struct rate_step {
  double from_s = 0;
  double aps = 0;
};

// "0:0.2,600:0.8,1200:0.2": steps in increasing time, the first at 0, every rate positive. bad_input names
// the entry and what is wrong.
result<std::vector<rate_step>> parse_aps_profile(std::string_view text);

// Arrival times of a Poisson process whose rate follows `profile` (piecewise constant). A gap that would cross
// into the next step is drawn again from that step's start at its rate: exact, since the process has no memory.
class arrival_clock {
 public:
  arrival_clock(std::vector<rate_step> profile, uint64_t seed);
  // The next arrival's time; the first is at 0.
  double next();

 private:
  std::vector<rate_step> profile_;
  std::mt19937_64 rng_;
  size_t step_ = 0;
  double clock_ = 0;
  bool first_ = true;
};

}  // namespace dualpath
