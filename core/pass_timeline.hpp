#pragma once
// Where a prefill pass's wall time goes, phase by phase (docs/design.md §4): admitting (the worker's start
// and, under ep_sync, the EP round), waiting for staged hit KV, computing layers, draining (the last
// forwards after the last layer) and finishing (LM head, first token). Each engine of the runtime records
// its finished passes here; a run's report gives medians (`pass_timeline_ms`), so that the runtime's cost per
// pass can be set against the simulator's cost model phase by phase. One log per process, as
// core/progress.hpp: an embedded run's engines all record here; node processes keep theirs (not reported).
#include <array>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace dualpath::pass_timeline {

enum class phase : uint8_t { admit, wait_kv, compute, drain, finish };
inline constexpr size_t phase_count = 5;
const char* phase_name(phase p);

// The round trips of a pass's hit-KV fetches (asked to answered, ms), by where the KV sat: the pass's own
// node's buffer (the PE read path) or another node's (a decode node's, the DE read path), and layer 0's
// slowest, which the pass's start waits for. Negative where the pass had no such fetch.
struct fetch_round_trips {
  double own_ms = -1;    // median over the pass's fetches from its own node
  double other_ms = -1;  // median over those from other nodes
  double first_ms = -1;  // layer 0's, the slowest of its sources
};

// A pass's fetch round trips as their answers come (the prefill engine's pass state holds one).
class fetch_log {
 public:
  void add(bool own_node, uint32_t layer, double ms);
  fetch_round_trips round_trips() const;  // the pass's figures, -1 where it had no such fetch

 private:
  std::vector<double> own_, other_;
  double first_ = -1;
};

struct pass_record {
  std::array<double, phase_count> ms{};  // wall time in each phase
  double worker_ms = 0;                  // of `compute`: what the compute worker itself measured
  uint32_t requests = 0;
  uint64_t tokens = 0;
  fetch_round_trips fetches;
  double total_ms() const;
};

// Medians over a run's passes, per phase and in all; `passes` = 0 when none was recorded. The fetch round
// trips are medians over the passes that had such fetches (0 where none had).
struct summary {
  uint64_t passes = 0;
  std::array<double, phase_count> median_ms{};
  double total_median_ms = 0, worker_median_ms = 0;
  std::array<double, phase_count> share{};  // each phase's part of the summed wall time of all passes
  fetch_round_trips fetch_median_ms{0, 0, 0};
};
summary summarize(const std::vector<pass_record>& passes);

// The median of `v` (the mean of the middle two for an even count; 0 for none).
double median(std::vector<double> v);

class log {
 public:
  // A long-lived process (`dualpath serve`) keeps a uniform sample of its passes, not every one.
  static constexpr size_t capacity = size_t(1) << 16;

  void record(const pass_record& r) {
    std::lock_guard lock(mutex_);
    ++seen_;
    if (passes_.size() < capacity) return passes_.push_back(r);
    // Reservoir sampling: every pass seen since the last take stays with the same chance, so the medians
    // hold. A fixed-seed LCG: deterministic, and no shared random state.
    rng_ = rng_ * 6364136223846793005ULL + 1442695040888963407ULL;
    const uint64_t k = (rng_ >> 11) % seen_;
    if (k < capacity) passes_[k] = r;
  }
  // The passes recorded since the last take (a run's, when each run takes them at its end; at most
  // `capacity`, sampled beyond it).
  std::vector<pass_record> take() {
    std::lock_guard lock(mutex_);
    seen_ = 0;
    return std::exchange(passes_, {});
  }

 private:
  std::mutex mutex_;
  std::vector<pass_record> passes_;
  uint64_t seen_ = 0, rng_ = 1;
};

inline log& process_log() {
  static log l;
  return l;
}

}  // namespace dualpath::pass_timeline
