#pragma once
// The linear layers of a decode step: a few rows against every weight of the model. OpenBLAS's sgemm copies
// (packs) the whole weight matrix before it multiplies, so at 8 rows it reads each weight three times and
// spends most of a decode step packing. This GEMM reads each weight once and adds in exactly the order of the
// packed sgemm on this machine: for each output, a fused multiply-add chain over each of sgemm's K blocks,
// each block's sum added to the output. A decoded token then equals a full recompute of its context (which
// runs sgemm on many rows) bit for bit.
//
// Its weights are its own copy, laid out once per matrix (at the first product that needs them) so that one
// vector load brings the same k of a block of outputs: a step then loads a full vector of weights per
// multiply-add instead of broadcasting them one at a time, and each block streams from memory in order.
//
// The K blocking is sgemm's own and depends on the CPU OpenBLAS picked, so it is not assumed: at start each
// inner dimension is calibrated against sgemm on random data, and one whose sums match no candidate
// blocking (or a CPU without AVX2 and FMA) stays on sgemm. docs/design.md §10 (cpu backend).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

namespace dualpath::gpu::cpu {

class skinny_gemm {
 public:
  static constexpr uint64_t max_rows = 16;

  // Calibrates the given inner dimensions (the model's hidden, attention and MLP widths). `lanes` 0 takes the
  // widest kernel this CPU runs; 8 asks for the AVX2 one (tests run it on AVX-512 machines too).
  explicit skinny_gemm(const std::vector<uint64_t>& inner_dims, uint64_t lanes = 0);

  // Whether rows × in products run here (else the caller keeps sgemm).
  bool covers(uint64_t rows, uint64_t in) const;

  // Outputs per vector of the kernel (16 with AVX-512, 8 with AVX2): column ranges start at multiples of it.
  uint64_t lanes() const { return lanes_; }

  // w [out, in] row-major laid out for the kernel: [out / lanes blocks][in][lanes], zero past `out`.
  struct packed_weights {
    std::vector<float> data;
    uint64_t out = 0, in = 0;
  };
  void pack(const float* w, uint64_t out, uint64_t in, packed_weights& p) const;

  // The packed copy of w, made at the first call for it and kept (w must outlive this object and not change).
  const packed_weights& packed(const float* w, uint64_t out, uint64_t in) const;

  // y[r, c] = x[r] · w[c] + beta·y[r, c] for columns [c0, c1) of the out-wide y; x is [rows, in] row-major,
  // c0 a multiple of lanes(). beta is 0 or 1 (what the backend uses). Requires covers(rows, w.in).
  void multiply(const float* x, uint64_t rows, const packed_weights& w, uint64_t c0, uint64_t c1, float beta,
                float* y) const;

  // The K block boundaries found for `in` (empty where it stays on sgemm); for tests and the debug log.
  std::vector<uint32_t> blocks(uint64_t in) const;

 private:
  uint64_t lanes_;
  std::map<uint64_t, std::vector<uint32_t>> blocks_;  // inner dimension -> K block boundaries 0 = b0 < .. < in
  mutable std::mutex packed_mu_;
  mutable std::map<std::tuple<const float*, uint64_t, uint64_t>, std::unique_ptr<packed_weights>> packed_;
};

}  // namespace dualpath::gpu::cpu
