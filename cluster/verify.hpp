#pragma once
// The correctness invariant of docs/design.md §10: a turn computed over KV loaded from storage (either
// path) gives the same tokens as a full prefill of the whole prompt from scratch.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "cluster/vocabulary.hpp"
#include "gpu/backend.hpp"

namespace dualpath::cluster {

// Recomputes a turn from scratch (full prefill of `prompt`, then decode, each token picked as `sample` says):
// the correctness reference.
std::vector<int32_t> recompute_turn(gpu::compute_backend& backend, const std::vector<int32_t>& prompt, uint32_t gen,
                                    const gpu::sampling& sample = {});

// (prompt, generated) of every turn sent for verification.
using turns_to_verify = std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>>;

struct verify_counts {
  uint64_t verified = 0, mismatched = 0;
};

// Recomputes every turn on the cpu backend with the run's weights: `run_backend` itself when it is the
// cpu backend, else a fresh one built from `options`. The modeled backend has no tokens to compare.
verify_counts verify_turns(const turns_to_verify& turns, const std::shared_ptr<gpu::compute_backend>& run_backend,
                           const gpu::backend_options& options);

}  // namespace dualpath::cluster
