#pragma once
// The cpu backend's linear layers: y = x · wᵀ + beta·y for any number of rows, in one fixed order of sums.
//
// Each output is summed as a fused multiply-add chain from zero over each block of `k_block` inputs, and each
// block's sum is added to the output in block order. The order depends on nothing but the inner dimension, so
// a row's result never depends on how many rows share its call or where it sits among them: a token decoded
// in a batch of any size equals a full recompute of its context (many rows) bit for bit in these layers, on
// every CPU. OpenBLAS's sgemm does not promise that: on some cores its sums for a row depend on the row's
// position in the call (docs/design.md §10), so the backend runs sgemm only where no kernel here runs.
//
// The weights are laid out once, when the model is loaded, as [out / lanes blocks][in][lanes]: one vector load
// brings the same k of a block of outputs, and each block streams from memory in order (a decode step, a few
// rows against every weight, reads each weight once; sgemm would first copy the whole matrix).
//
// A matrix whose every weight is a bf16 value (a bf16 checkpoint, the catalog's seeded weights) is kept in bf16
// and widened as it is loaded: widening is exact, so every product is the same to the bit as over its fp32 copy,
// and a decode step, which streams each weight once from memory, reads half the bytes.
#include <cstdint>
#include <vector>

#include "core/huge_pages.hpp"

namespace dualpath::gpu::cpu {

class gemm {
 public:
  // Inputs per block of the sum order: 16 rows of x over one block (16 KB) stay in L1 beside a block of weights.
  static constexpr uint64_t k_block = 256;
  // `lanes` 0 takes the widest kernel this CPU runs (16 with AVX-512, 8 with AVX2 and FMA, 0 without either:
  // then every product runs sgemm); 8 asks for the AVX2 kernel (tests run it on AVX-512 machines too).
  explicit gemm(uint64_t lanes = 0);

  // Outputs per vector of the kernel; column ranges start at multiples of 16 (a multiple of every width).
  uint64_t lanes() const { return lanes_; }

  // A weight matrix w[out, in] (row-major) as multiply() reads it: laid out for the kernel where one runs,
  // else kept as it is for sgemm.
  struct weights {
    std::vector<float, huge_page_allocator<float>> data;        // huge pages: a decode step streams it
    std::vector<uint16_t, huge_page_allocator<uint16_t>> half;  // the packed weights in bf16; `data` then empty
    uint64_t out = 0, in = 0;
    bool packed = false;

    bool bf16() const { return !half.empty(); }
    uint64_t element_bytes() const { return bf16() ? sizeof(uint16_t) : sizeof(float); }
    uint64_t bytes() const { return (data.size() + half.size()) * element_bytes(); }
  };
  // Packed in bf16 when every weight is exactly a bf16 value and `allow_bf16` (tests compare the two forms).
  weights prepare(std::vector<float> w, uint64_t out, uint64_t in, bool allow_bf16 = true) const;

  // y[r, c] (row stride w.out) for rows [0, rows) and columns [c0, c1), c0 a multiple of 16. beta is 0 or 1.
  void multiply(const float* x, uint64_t rows, const weights& w, uint64_t c0, uint64_t c1, float beta, float* y) const;

 private:
  uint64_t lanes_;
};

}  // namespace dualpath::gpu::cpu
