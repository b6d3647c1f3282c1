// Synthetic agent trajectories that reproduce the paper's dataset statistics (docs/design.md §11).
//
// Context model (why the numbers can hold together): the paper's 64K set has 157 turns of 429
// appended tokens, yet prompts stay under 64K and end at 55,958 on average, so agents must drop
// context. We model three things agent frameworks do, each in a cache-friendly way:
//  - reasoning tokens are not carried into the next prompt: of each turn's output only the leading
//    tool call / answer (20-50%) is kept;
//  - rollback: now and then an agent abandons a failed approach and returns to the state it had
//    a few turns earlier (the context is cut back to that earlier prefix, which is still cached);
//  - compaction: when the next prompt would pass 97% of the window, the history after the task
//    prompt is replaced by a summary (15% of it), which the next turn must prefill.
// Appends are front-loaded within a trajectory (exploration reads more than the later edit/test
// loop), and agents with more turns take smaller steps, so every agent grows towards the window.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/names.hpp"
#include "core/status.hpp"
#include "core/trace.hpp"

namespace dualpath {

const std::vector<trace_preset>& trace_presets() {
  // name, window, turns, appended, generated per turn, context (0: the paper gives none).
  static const std::vector<trace_preset> presets = {
      {"32k", 32768, 60, 608, 176, 0},
      {"48k", 49152, 106, 474, 176, 0},
      {"64k", 65536, 157, 429, 176, 32721},
  };
  return presets;
}

const trace_preset& find_trace_preset(const std::string& name) {
  return find_named(trace_presets(), name, "trace preset");
}

namespace {

// xoshiro256** seeded through splitmix64: fully specified, so a seed gives the same file everywhere
// (std:: distributions are implementation-defined, hence the hand-written ones below).
class rng {
 public:
  explicit rng(uint64_t seed) {
    for (auto& s : s_) s = splitmix(seed);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Log-normal with the given mean and log-space spread.
  double lognormal(double mean, double sigma) {
    return std::exp(std::log(mean) - sigma * sigma / 2 + sigma * normal());
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t s_[4];
};

struct shape_params {
  double turns_sigma = 0.35;   // spread of turns per agent
  double initial_mean = 3000;  // first prompt: system prompt + task
  double append_scale = 0;     // per-turn append mean before the front-loading and per-agent scaling
  double front_load = 1.0;     // append mean falls linearly from (1 + f/2) to (1 - f/2) over a trajectory
  double append_sigma = 0.9;   // tool outputs are heavy-tailed
  double gen_sigma = 0.7;
  double keep_lo = 0.2, keep_hi = 0.5;  // share of the output carried into the next prompt
  double rollback_p = 0.04;             // chance per turn of abandoning the last 1..rollback_max turns
  uint32_t rollback_max = 10;
  double compact_at = 0.97;     // compaction threshold as a share of the window
  double summary_share = 0.15;  // summary size as a share of the history it replaces
};

shape_params params_for(const trace_preset& p) {
  shape_params s;
  // The per-turn append scale is calibrated per preset so that 500 agents match the paper's mean
  // append, which also counts first prompts and compaction summaries (tests/core/trace_gen_test.cpp).
  const double calibration = p.name == "32k" ? 0.87 : p.name == "48k" ? 0.90 : 0.92;
  s.append_scale = p.append_mean * calibration;
  return s;
}

uint32_t clamp_round(double v, double lo, double hi) { return uint32_t(std::lround(std::clamp(v, lo, hi))); }

trajectory generate_one(const trace_preset& preset, const shape_params& sp, uint64_t seed, uint32_t index) {
  // One generator per agent, so agent i is the same whatever the agent count.
  rng r(seed ^ (0x9e3779b97f4a7c15ull * (uint64_t(index) + 1)));
  trajectory t;
  t.id = fmt::format("{}-{}", preset.name, index);
  const double window = preset.max_len;
  const uint32_t turns = clamp_round(r.lognormal(preset.turns_mean, sp.turns_sigma), 8, 3 * preset.turns_mean);
  const uint32_t initial = clamp_round(r.lognormal(sp.initial_mean, 0.4), 500, window / 4);
  const double agent_scale = sp.append_scale * preset.turns_mean / turns;

  // Contexts (prompt + kept output) after earlier turns that are still prefixes of the current one:
  // the states a rollback can return to.
  std::vector<uint64_t> states;
  for (uint32_t i = 0; i < turns; ++i) {
    trace_round round;
    uint64_t base = 0;
    if (i == 0) {
      round.append = initial;
    } else {
      const double position = double(i) / turns;
      const double mean = agent_scale * (1.0 + sp.front_load / 2 - sp.front_load * position);
      uint64_t append = clamp_round(r.lognormal(mean, sp.append_sigma), 8, 16384);
      base = states.back();
      if (i >= 3 && states.size() > 1 && r.uniform() < sp.rollback_p) {
        const uint32_t depth = 1 + uint32_t(r.uniform() * std::min<size_t>(sp.rollback_max, states.size() - 1));
        states.resize(states.size() - depth);
        base = states.back();
        round.reset = base;
      }
      if (double(base + append) > sp.compact_at * window) {
        append += uint64_t(sp.summary_share * double(base - initial));
        base = initial;
        round.reset = base;
        states.clear();
      }
      round.append = uint32_t(std::min<uint64_t>(append, uint64_t(window) - base));
    }
    round.gen = clamp_round(r.lognormal(preset.gen_mean, sp.gen_sigma), 4, 4096);
    round.keep = std::max<uint32_t>(1, uint32_t(round.gen * r.uniform(sp.keep_lo, sp.keep_hi)));
    states.push_back(base + round.append + round.keep);
    t.rounds.push_back(round);
  }
  return t;
}

}  // namespace

std::vector<trajectory> generate_trajectories(const trace_preset& preset, uint32_t agents, uint64_t seed) {
  if (agents == 0) throw user_error("trace gen: --agents must be at least 1");
  const shape_params sp = params_for(preset);
  std::vector<trajectory> out;
  out.reserve(agents);
  for (uint32_t i = 0; i < agents; ++i) out.push_back(generate_one(preset, sp, seed, i));
  return out;
}

}  // namespace dualpath
