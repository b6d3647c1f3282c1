#pragma once
// The part of CUDA and cuBLAS that the cuda backend uses, for building its sources as host code over the SIMT
// emulator (define DUALPATH_SIMT_EMULATION first). "Device" memory is host memory the shim hands out and
// remembers, so it can refuse what a GPU would refuse: a kernel argument or copy that points outside device
// memory, a copy whose direction does not match its pointers, a launch over the block or shared-memory limits.
// Fresh device memory is filled with 0xff bytes (NaN) like the garbage it holds on a GPU. GEMMs convert their
// bf16 inputs to fp32 and run OpenBLAS sgemm. The functions are C++ (mangled) so a binary may also link the
// real runtime.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "gpu/bf16.hpp"
#include "simt.hpp"

#ifndef DUALPATH_SIMT_EMULATION
#error "cuda_shim.hpp is for builds with DUALPATH_SIMT_EMULATION"
#endif

// ---- device-code vocabulary --------------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static thread_local  // blocks run one after another on one thread: one copy per block
#define DP_DYNAMIC_SHARED(type, name) type* name = static_cast<type*>(::simt::dynamic_shared())

using dim3 = simt::dim3;

inline void __syncthreads() { simt::sync_threads(); }
inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask) {
  return simt::shuffle_as(v, simt::lane_id() ^ unsigned(lane_mask), mask);
}
template <typename T>
T __shfl_sync(unsigned mask, T v, int src_lane) {
  return simt::shuffle_as(v, unsigned(src_lane), mask);
}
struct alignas(16) float4 {
  float x, y, z, w;
};
// A warp barrier: a shuffle is already a rendezvous of the warp's 32 lanes.
inline void __syncwarp(unsigned mask = 0xffffffffu) { simt::shuffle(0, simt::lane_id(), mask); }
// Asynchronous copies to shared memory complete at once here; commits and waits have nothing to wait for.
inline void __pipeline_memcpy_async(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
inline void __pipeline_commit() {}
inline void __pipeline_wait_prior(size_t) {}
inline unsigned __float_as_uint(float f) { return dualpath::gpu::bits_of(f); }
inline float __uint_as_float(unsigned u) { return dualpath::gpu::float_of_bits(u); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
template <typename T>
T min(T a, T b) {
  return b < a ? b : a;
}

// ---- runtime -------------------------------------------------------------------------------------------------
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevice = 101,
  cudaErrorIllegalAddress = 700,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
enum cudaMemoryType {
  cudaMemoryTypeUnregistered = 0,
  cudaMemoryTypeHost = 1,
  cudaMemoryTypeDevice = 2,
  cudaMemoryTypeManaged = 3
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
struct cudaPointerAttributes {
  cudaMemoryType type = cudaMemoryTypeUnregistered;
  int device = 0;
};
using cudaStream_t = struct cudashim_stream*;
constexpr unsigned cudaStreamNonBlocking = 1;

namespace cudashim {

constexpr size_t default_shared_limit = 48 * 1024;
constexpr size_t optin_shared_limit = 163 * 1024;  // sm_80, the smallest architecture the build targets

bool is_device(const void* p, size_t bytes = 1);
cudaError_t fail(cudaError_t e, const std::string& message);  // records it for cudaGetLastError
cudaError_t last_error(bool clear);
const char* message_of(cudaError_t e);
cudaError_t device_malloc(void** p, size_t bytes);
cudaError_t device_free(void* p);
cudaError_t copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t set_shared_limit(const void* kernel, int bytes);
size_t shared_limit(const void* kernel);
bool check_launch(const void* kernel, const char* name, dim3 grid, dim3 block, size_t shared);

template <typename T>
void check_arg(const char* name, size_t index, const T& v, bool& ok) {
  if constexpr (std::is_pointer_v<T>) {
    if (ok && v && !is_device(v)) {
      fail(cudaErrorIllegalAddress, std::string(name) + ": argument " + std::to_string(index) +
                                        " points outside device memory (an illegal address on a GPU)");
      ok = false;
    }
  }
}

template <typename... P>
struct launch {
  void (*kernel)(P...);
  dim3 grid, block;
  size_t shared;
  const char* name;

  template <typename... A>
  void operator()(A&&... a) const {
    static_assert(sizeof...(A) == sizeof...(P), "kernel called with the wrong number of arguments");
    const std::tuple<P...> args(std::forward<A>(a)...);
    if (!check_launch(reinterpret_cast<const void*>(kernel), name, grid, block, shared)) return;
    bool ok = true;
    size_t index = 0;
    std::apply([&](const auto&... v) { (check_arg(name, index++, v, ok), ...); }, args);
    if (ok) simt::run_grid(name, grid, block, shared, [&] { std::apply(kernel, args); });
  }
};

template <typename... P>
launch<P...> make_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared, const char* name) {
  return {kernel, grid, block, shared, name};
}

}  // namespace cudashim

#define DP_LAUNCH(kernel, grid, block, shared, stream) \
  ((void)(stream), ::cudashim::make_launch(kernel, grid, block, shared, #kernel))

inline cudaError_t cudaMalloc(void** p, size_t bytes) { return cudashim::device_malloc(p, bytes); }
template <typename T>
cudaError_t cudaMalloc(T** p, size_t bytes) {
  return cudashim::device_malloc(reinterpret_cast<void**>(p), bytes);
}
inline cudaError_t cudaFree(void* p) { return cudashim::device_free(p); }
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  return cudashim::copy(dst, src, bytes, kind);
}
// Streams are in order and the emulator is synchronous: an async copy is done when it returns.
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
  return cudashim::copy(dst, src, bytes, kind);
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudashim::last_error(false); }
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = reinterpret_cast<cudaStream_t>(uintptr_t(1));
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaGetLastError() { return cudashim::last_error(true); }
inline const char* cudaGetErrorString(cudaError_t e) { return cudashim::message_of(e); }
inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int d) {
  return d == 0 ? cudaSuccess : cudashim::fail(cudaErrorInvalidDevice, "cudaSetDevice: the emulator has device 0 only");
}
inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  a->type = cudashim::is_device(p) ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
  return cudaSuccess;
}
template <typename F>
cudaError_t cudaFuncSetAttribute(F* kernel, cudaFuncAttribute, int value) {
  return cudashim::set_shared_limit(reinterpret_cast<const void*>(kernel), value);
}

// ---- cuBLAS --------------------------------------------------------------------------------------------------
enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_NOT_SUPPORTED = 15 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cudaDataType { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };
enum cublasMath_t { CUBLAS_DEFAULT_MATH = 0 };
using cublasHandle_t = struct cudashim_blas*;

inline cublasStatus_t cublasCreate(cublasHandle_t* h) {
  *h = reinterpret_cast<cublasHandle_t>(uintptr_t(1));
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDestroy(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }

namespace cudashim {
// Column-major C = alpha·op(A)·op(B) + beta·C; A and B bf16 or fp32, C fp32, fp32 compute.
cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const void* A,
                    cudaDataType at, int lda, const void* B, cudaDataType bt, int ldb, float beta, void* C,
                    cudaDataType ct, int ldc, cublasComputeType_t compute);
}  // namespace cudashim

inline cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                   const void* alpha, const void* A, cudaDataType at, int lda, const void* B,
                                   cudaDataType bt, int ldb, const void* beta, void* C, cudaDataType ct, int ldc,
                                   cublasComputeType_t compute, cublasGemmAlgo_t) {
  return cudashim::gemm(ta, tb, m, n, k, *static_cast<const float*>(alpha), A, at, lda, B, bt, ldb,
                        *static_cast<const float*>(beta), C, ct, ldc, compute);
}
