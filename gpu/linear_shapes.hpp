#pragma once
// The linear layers of one transformer layer as the backends run them, fused: QKV, O, gate + up, down. The weight
// count a decode step reads (backend.cpp) and the sgemm yardstick of `bench compute` both walk this one list.
#include <array>
#include <cstdint>

#include "core/model_catalog.hpp"

namespace dualpath::gpu {

struct linear_shape {
  uint64_t in, out;
};

inline std::array<linear_shape, 4> layer_linear_shapes(const model_spec& m) {
  const uint64_t H = m.hidden, Q = uint64_t(m.heads) * m.head_dim, KV = uint64_t(m.kv_heads) * m.head_dim,
                 I = m.intermediate;
  return {{{H, Q + 2 * KV}, {Q, H}, {H, 2 * I}, {I, H}}};
}

}  // namespace dualpath::gpu
