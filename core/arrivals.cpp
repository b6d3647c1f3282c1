#include "core/arrivals.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

namespace dualpath {

namespace {

bool parse_number(std::string_view text, double& out) {
  const std::string s(text);
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

}  // namespace

result<std::vector<rate_step>> parse_aps_profile(std::string_view text) {
  std::vector<rate_step> out;
  auto bad = [&](std::string_view entry, const std::string& why) {
    return status(errc::bad_input, fmt::format("--aps-profile: '{}': {}", entry, why));
  };
  bool more = !text.empty();
  while (more) {
    const size_t comma = text.find(',');
    const std::string_view entry = text.substr(0, comma);
    more = comma != std::string_view::npos;
    text = more ? text.substr(comma + 1) : std::string_view();
    const size_t colon = entry.find(':');
    if (colon == std::string_view::npos) return bad(entry, "expected FROM_S:APS");
    rate_step s;
    if (!parse_number(entry.substr(0, colon), s.from_s) || !(s.from_s >= 0))
      return bad(entry, "the start must be a number of seconds >= 0");
    if (!parse_number(entry.substr(colon + 1), s.aps) || !(s.aps > 0))
      return bad(entry, "the rate must be a positive number of agents per second");
    if (out.empty() && s.from_s != 0) return bad(entry, "the first step must start at 0");
    if (!out.empty() && !(s.from_s > out.back().from_s)) return bad(entry, "steps must start in increasing time");
    out.push_back(s);
  }
  if (out.empty()) return status(errc::bad_input, "--aps-profile: expected FROM_S:APS,... (e.g. 0:0.2,600:0.8)");
  return out;
}

arrival_clock::arrival_clock(std::vector<rate_step> profile, uint64_t seed)
    : profile_(std::move(profile)), rng_(seed) {}

double arrival_clock::next() {
  if (first_) {
    first_ = false;
    return clock_;
  }
  for (;;) {
    std::exponential_distribution<double> gap(profile_[step_].aps);
    const double t = clock_ + gap(rng_);
    if (step_ + 1 < profile_.size() && t >= profile_[step_ + 1].from_s) {
      clock_ = profile_[++step_].from_s;
      continue;
    }
    clock_ = t;
    return t;
  }
}

}  // namespace dualpath
