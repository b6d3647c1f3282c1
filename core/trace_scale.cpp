#include <algorithm>
#include <cmath>

#include "core/trace.hpp"

namespace dualpath {

status check_trace_scale(const trace_scale& s) {
  auto bad = [](double x) { return !(x > 0) || !std::isfinite(x); };
  if (bad(s.divide)) return status(errc::bad_input, "--scale must be a positive number");
  if (bad(s.append)) return status(errc::bad_input, "--append-scale must be a positive number");
  if (bad(s.gen)) return status(errc::bad_input, "--gen-scale must be a positive number");
  return {};
}

trajectory scale_trajectory(const trajectory& t, const trace_scale& s) {
  auto scaled = [](double x) { return uint32_t(std::llround(x)); };
  trajectory out;
  out.id = t.id;
  // A reset names a prefix of the previous context; both contexts are followed so the scaled prefix keeps
  // its share of the scaled context, whatever the append and generation factors did to it.
  uint64_t context = 0, scaled_context = 0;
  for (size_t i = 0; i < t.rounds.size(); ++i) {
    const trace_round& r = t.rounds[i];
    trace_round q;
    q.append = std::max<uint32_t>(1, scaled(r.append * s.append / s.divide));
    q.gen = std::max<uint32_t>(1, scaled(r.gen * s.gen / s.divide));
    q.keep = std::min(q.gen, scaled(r.keep * s.gen / s.divide));
    q.tool_ms = r.tool_ms;
    uint64_t base = i == 0 ? 0 : context, scaled_base = i == 0 ? 0 : scaled_context;
    if (r.reset) {
      const uint64_t kept = std::min(base, *r.reset);
      const uint64_t share = base == 0 ? 0 : uint64_t(std::llround(double(kept) * double(scaled_base) / double(base)));
      q.reset = std::min(scaled_base, share);
      base = kept;
      scaled_base = *q.reset;
    }
    context = base + r.append + r.keep;
    scaled_context = scaled_base + q.append + q.keep;
    out.rounds.push_back(q);
  }
  return out;
}

}  // namespace dualpath
