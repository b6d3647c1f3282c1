#pragma once
// A small SIMT emulator so the cuda backend's kernels run, as host code, in tests on machines without a GPU.
// Every thread of a block is a fiber (Boost.Context); blocks run one after another on the calling thread.
// __syncthreads and warp shuffles are real rendezvous between those fibers, so the kernels' tiling, masking,
// online-softmax merges and warp reductions execute exactly as written. What it checks beyond the results:
// a shuffle that not all 32 lanes of a warp reach, partial shuffle masks, and (with zero-filled memory never
// assumed) shared memory that starts as NaN bytes, as uninitialised as on a GPU. What it cannot show: timing,
// memory-ordering races between warps, or anything about the hardware.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

namespace simt {

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

// A kernel that would hang or be undefined on a GPU (divergent shuffle, deadlock).
struct kernel_fault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs body() once per thread of every block of `grid` (block shape `block`, a multiple of 32 threads), with
// `shared_bytes` of dynamic shared memory per block. Throws kernel_fault naming `kernel` on a fault.
void run_grid(const char* kernel, dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()>& body);

// Inside a running kernel:
void sync_threads();
uint64_t shuffle(uint64_t bits, unsigned src_lane, unsigned mask);  // value of `bits` held by lane src_lane
unsigned lane_id();
void* dynamic_shared();

template <typename T>
T shuffle_as(T v, unsigned src_lane, unsigned mask) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "shuffles move at most 64 bits");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  bits = shuffle(bits, src_lane, mask);
  T out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

}  // namespace simt

// The coordinates of the fiber that runs now (CUDA's built-in variables).
extern thread_local simt::dim3 threadIdx, blockIdx, blockDim, gridDim;
