#pragma once
// The token ids of a trajectory turn (docs/design.md §11): the context the agent carries (turn r-1's prompt and
// its kept generation) up to this turn's hit candidates, then the appended tokens, drawn from (seed, agent,
// turn). The in-process agent clients and `bench serve` both build their prompts here, so one workload is
// the same tokens whichever way it reaches the cluster.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "core/trace.hpp"

namespace dualpath {

inline std::vector<int32_t> turn_prompt(std::vector<int32_t> context, const turn_shape& shape, uint64_t seed,
                                        uint32_t agent, uint32_t turn, uint32_t vocab) {
  if (context.size() > shape.hit_candidates) context.resize(shape.hit_candidates);
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull ^ (uint64_t(agent) << 32) ^ turn);
  std::uniform_int_distribution<int32_t> pick(0, int32_t(vocab) - 1);
  while (context.size() < shape.prompt) context.push_back(pick(rng));
  return context;
}

// The context the next turn starts from: this turn's prompt and the first `shape.keep` generated ids.
inline std::vector<int32_t> next_context(std::vector<int32_t> prompt, const turn_shape& shape,
                                         const std::vector<int32_t>& generated) {
  const size_t keep = std::min<size_t>(shape.keep, generated.size());
  prompt.insert(prompt.end(), generated.begin(), generated.begin() + std::ptrdiff_t(keep));
  return prompt;
}

}  // namespace dualpath
