// The GPU's roofs for bench compute (cuda_backend.hpp): cuBLAS bf16 GEMMs on the linear layers' shapes and a
// device-to-device copy, each timed with CUDA events over rounds of at least 20 ms.
#include <vector>

#include "gpu/cuda/check.hpp"
#include "gpu/cuda_backend.hpp"

namespace dualpath::gpu {

namespace {

using cuda_status::check;

constexpr float min_round_ms = 20;
constexpr uint64_t copy_bytes = uint64_t(1) << 30;  // far beyond the L2 of any GPU

}  // namespace

struct cuda_yardsticks::impl {
  struct shape {
    uint64_t in, out;
  };
  uint32_t rows = 0;
  std::vector<shape> shapes;
  std::vector<void*> buffers;  // x, w, y per shape, then the copy's source and destination
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  double flops = 0;

  void* alloc(uint64_t bytes) {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    check(cudaMemsetAsync(p, 0, bytes, stream), "cudaMemsetAsync");  // bf16 zeros: finite, like any weights
    buffers.push_back(p);
    return p;
  }
  // Runs `round` until the GPU has spent at least min_round_ms on it; returns (rounds, milliseconds).
  template <typename F>
  std::pair<uint32_t, float> time(F round) {
    uint32_t rounds = 1;
    for (;;) {
      check(cudaEventRecord(start, stream), "cudaEventRecord");
      for (uint32_t i = 0; i < rounds; ++i) round();
      check(cudaEventRecord(stop, stream), "cudaEventRecord");
      check(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
      if (ms >= min_round_ms || rounds >= (1u << 20)) return {rounds, ms};
      rounds *= 2;
    }
  }
};

cuda_yardsticks::cuda_yardsticks(const model_spec& m, uint32_t rows, int device) : impl_(std::make_unique<impl>()) {
  auto& s = *impl_;
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cublasCreate(&s.blas), "cublasCreate");
  check(cublasSetStream(s.blas, s.stream), "cublasSetStream");
  check(cudaEventCreate(&s.start), "cudaEventCreate");
  check(cudaEventCreate(&s.stop), "cudaEventCreate");
  const uint64_t H = m.hidden, Q = uint64_t(m.heads) * m.head_dim, KV = uint64_t(m.kv_heads) * m.head_dim,
                 I = m.intermediate;
  s.rows = rows;
  s.shapes = {{H, Q + 2 * KV}, {Q, H}, {H, 2 * I}, {I, H}};
  for (const auto& sh : s.shapes) {
    s.alloc(rows * sh.in * 2);
    s.alloc(sh.out * sh.in * 2);
    s.alloc(rows * sh.out * 4);
    s.flops += 2.0 * rows * sh.in * sh.out;
  }
  s.alloc(copy_bytes);
  s.alloc(copy_bytes);
  check(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
}

cuda_yardsticks::~cuda_yardsticks() {
  auto& s = *impl_;
  for (void* p : s.buffers) cudaFree(p);
  if (s.start) cudaEventDestroy(s.start);
  if (s.stop) cudaEventDestroy(s.stop);
  if (s.blas) cublasDestroy(s.blas);
  if (s.stream) cudaStreamDestroy(s.stream);
}

double cuda_yardsticks::gemm_gflop_per_s() {
  auto& s = *impl_;
  const float alpha = 1, beta = 0;
  const auto [rounds, ms] = s.time([&] {
    for (size_t i = 0; i < s.shapes.size(); ++i) {
      const auto& sh = s.shapes[i];
      check(cublasGemmEx(s.blas, CUBLAS_OP_T, CUBLAS_OP_N, int(sh.out), int(s.rows), int(sh.in), &alpha,
                         s.buffers[3 * i + 1], CUDA_R_16BF, int(sh.in), s.buffers[3 * i], CUDA_R_16BF, int(sh.in),
                         &beta, s.buffers[3 * i + 2], CUDA_R_32F, int(sh.out), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
    }
  });
  return s.flops * rounds / (ms * 1e-3) / 1e9;
}

double cuda_yardsticks::copy_gb_per_s() {
  auto& s = *impl_;
  void* src = s.buffers[s.buffers.size() - 2];
  void* dst = s.buffers.back();
  const auto [rounds, ms] = s.time(
      [&] { check(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice, s.stream), "cudaMemcpyAsync"); });
  return 2.0 * double(copy_bytes) * rounds / (ms * 1e-3) / 1e9;
}

}  // namespace dualpath::gpu
