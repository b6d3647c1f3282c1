#pragma once
// The linear layers of a decode step: a few rows against every weight of the model. OpenBLAS's sgemm copies
// (packs) the whole weight matrix before it multiplies, so at 8 rows it reads each weight three times and
// spends most of a decode step packing. This GEMM reads each weight once, straight from its row, and adds
// in exactly the order of the packed sgemm on this machine: for each output, a fused multiply-add chain over
// each of sgemm's K blocks, each block's sum added to the output. A decoded token then equals a full
// recompute of its context (which runs sgemm on many rows) bit for bit.
//
// The K blocking is sgemm's own and depends on the CPU OpenBLAS picked, so it is not assumed: at start each
// inner dimension is calibrated against sgemm on random data, and one whose sums match no candidate
// blocking (or a CPU without AVX2 and FMA) stays on sgemm. docs/design.md §10 (cpu backend).
#include <cstdint>
#include <map>
#include <vector>

namespace dualpath::gpu::cpu {

class skinny_gemm {
 public:
  static constexpr uint64_t max_rows = 16;

  // Calibrates the given inner dimensions (the model's hidden, attention and MLP widths).
  explicit skinny_gemm(const std::vector<uint64_t>& inner_dims);

  // Whether rows × in products run here (else the caller keeps sgemm).
  bool covers(uint64_t rows, uint64_t in) const;

  // x[rows, in] laid out for the kernel: [rows / 8 groups][in][8 lanes], zero beyond the rows.
  struct packed_rows {
    std::vector<float> lanes;
    uint64_t rows = 0, in = 0;
  };
  static void pack(const float* x, uint64_t rows, uint64_t in, packed_rows& out);

  // y[r, c] = x[r] · w[c] + beta·y[r, c] for columns [c0, c1) of the out-wide y; w is [out, in] row-major.
  // beta is 0 or 1 (what the backend uses). Requires covers(x.rows, x.in).
  void multiply(const packed_rows& x, const float* w, uint64_t out, uint64_t c0, uint64_t c1, float beta,
                float* y) const;

  // The K block boundaries found for `in` (empty where it stays on sgemm); for tests and the debug log.
  std::vector<uint32_t> blocks(uint64_t in) const;

 private:
  std::map<uint64_t, std::vector<uint32_t>> blocks_;  // inner dimension -> K block boundaries 0 = b0 < .. < in
};

}  // namespace dualpath::gpu::cpu
