#include "core/faults.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <sstream>

namespace dualpath::faults {

namespace {

struct seam {
  std::atomic<bool> armed{false};
  uint32_t skip = 0;       // under mu
  uint32_t remaining = 0;  // under mu; 0 with `every` = unbounded
  bool every = false;
  std::atomic<uint64_t> fired{0};
};

std::mutex mu;
seam seams[point_count];

const char* const names[point_count] = {"storage_read",      "storage_write", "fabric_post",
                                        "fabric_completion", "compute_step",  "node_stop"};

}  // namespace

const char* name(point p) { return names[int(p)]; }

void arm(point p, uint32_t times, uint32_t skip) {
  std::lock_guard<std::mutex> g(mu);
  auto& s = seams[int(p)];
  s.skip = skip;
  s.every = times == 0;
  s.remaining = times;
  s.armed = true;
}

void disarm(point p) {
  std::lock_guard<std::mutex> g(mu);
  seams[int(p)].armed = false;
}

bool fire(point p) {
  auto& s = seams[int(p)];
  if (!s.armed.load(std::memory_order_relaxed)) return false;
  std::lock_guard<std::mutex> g(mu);
  if (!s.armed) return false;
  if (s.skip > 0) {
    --s.skip;
    return false;
  }
  if (!s.every && --s.remaining == 0) s.armed = false;
  ++s.fired;
  return true;
}

uint64_t fired(point p) { return seams[int(p)].fired.load(); }

status arm_from_env() {
  const char* text = std::getenv("DUALPATH_FAULTS");
  if (!text || !*text) return {};
  std::stringstream in(text);
  std::string entry;
  while (std::getline(in, entry, ',')) {
    std::string parts[3];
    std::stringstream e(entry);
    int n = 0;
    while (n < 3 && std::getline(e, parts[n], ':')) ++n;
    int found = -1;
    for (int i = 0; i < point_count; ++i)
      if (parts[0] == names[i]) found = i;
    if (found < 0) return status(errc::bad_input, "DUALPATH_FAULTS: unknown fault point '" + parts[0] + "'");
    char* end = nullptr;
    const unsigned long times = n > 1 ? std::strtoul(parts[1].c_str(), &end, 10) : 1;
    if (n > 1 && (*end != '\0' || parts[1].empty()))
      return status(errc::bad_input, "DUALPATH_FAULTS: bad count in '" + entry + "'");
    const unsigned long skip = n > 2 ? std::strtoul(parts[2].c_str(), &end, 10) : 0;
    if (n > 2 && (*end != '\0' || parts[2].empty()))
      return status(errc::bad_input, "DUALPATH_FAULTS: bad skip in '" + entry + "'");
    arm(point(found), uint32_t(times), uint32_t(skip));
  }
  return {};
}

}  // namespace dualpath::faults
