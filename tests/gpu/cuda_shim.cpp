#define DUALPATH_SIMT_EMULATION 1
#include "cuda_shim.hpp"

#include <cblas.h>
#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "gpu/bf16.hpp"

namespace cudashim {

namespace {

struct device_state {
  std::mutex mu;
  std::map<uintptr_t, size_t> allocations;  // base -> bytes
  std::unordered_map<const void*, size_t> shared_limits;
};

device_state& state() {
  static device_state s;
  return s;
}

thread_local cudaError_t last = cudaSuccess;
thread_local std::string last_message;

const char* name_of(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
  }
  return "unknown error";
}

}  // namespace

bool is_device(const void* p, size_t bytes) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  const auto a = uintptr_t(p);
  auto it = s.allocations.upper_bound(a);
  if (it == s.allocations.begin()) return false;
  --it;
  return a >= it->first && a + bytes <= it->first + it->second;
}

cudaError_t fail(cudaError_t e, const std::string& message) {
  last = e;
  last_message = fmt::format("{} ({})", name_of(e), message);
  return e;
}

cudaError_t last_error(bool clear) {
  const cudaError_t e = last;
  if (clear) last = cudaSuccess;
  return e;
}

const char* message_of(cudaError_t e) { return e == last && e != cudaSuccess ? last_message.c_str() : name_of(e); }

cudaError_t device_malloc(void** p, size_t bytes) {
  const size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  void* m = std::aligned_alloc(256, rounded);
  if (!m) return fail(cudaErrorMemoryAllocation, fmt::format("cudaMalloc of {} bytes", bytes));
  std::memset(m, 0xff, rounded);
  auto& s = state();
  std::lock_guard lock(s.mu);
  s.allocations[uintptr_t(m)] = rounded;
  *p = m;
  return cudaSuccess;
}

cudaError_t device_free(void* p) {
  if (!p) return cudaSuccess;
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (!s.allocations.erase(uintptr_t(p)))
    return fail(cudaErrorInvalidValue, "cudaFree of a pointer cudaMalloc never gave");
  std::free(p);
  return cudaSuccess;
}

cudaError_t copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (!bytes) return cudaSuccess;
  const bool dst_dev = is_device(dst, bytes), src_dev = is_device(src, bytes);
  const bool dst_in = is_device(dst), src_in = is_device(src);
  if ((dst_in && !dst_dev) || (src_in && !src_dev))
    return fail(cudaErrorInvalidValue,
                fmt::format("a copy of {} bytes runs past the end of its device allocation", bytes));
  const bool want_dst = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool want_src = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind != cudaMemcpyDefault && (dst_dev != want_dst || src_dev != want_src))
    return fail(cudaErrorInvalidValue,
                fmt::format("copy kind {} does not match its pointers (dst {}, src {})", int(kind),
                            dst_dev ? "device" : "host", src_dev ? "device" : "host"));
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t set_shared_limit(const void* kernel, int bytes) {
  if (bytes < 0 || size_t(bytes) > optin_shared_limit)
    return fail(cudaErrorInvalidValue, fmt::format("{} bytes of dynamic shared memory exceed the {} an sm_80 block "
                                                   "may opt into",
                                                   bytes, optin_shared_limit));
  auto& s = state();
  std::lock_guard lock(s.mu);
  s.shared_limits[kernel] = size_t(bytes);
  return cudaSuccess;
}

size_t shared_limit(const void* kernel) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  const auto it = s.shared_limits.find(kernel);
  return it == s.shared_limits.end() ? default_shared_limit : std::max(default_shared_limit, it->second);
}

bool check_launch(const void* kernel, const char* name, dim3 grid, dim3 block, size_t shared) {
  const uint64_t threads = uint64_t(block.x) * block.y * block.z;
  if (threads == 0 || threads > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
      grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535) {
    fail(cudaErrorInvalidConfiguration,
         fmt::format("{}: grid ({},{},{}) block ({},{},{})", name, grid.x, grid.y, grid.z, block.x, block.y, block.z));
    return false;
  }
  if (shared > shared_limit(kernel)) {
    fail(cudaErrorInvalidValue,
         fmt::format("{}: {} bytes of dynamic shared memory, {} allowed", name, shared, shared_limit(kernel)));
    return false;
  }
  return true;
}

namespace {

// The stored extent of a column-major operand op(X) of rows x cols with leading dimension ld.
size_t stored_elements(cublasOperation_t t, int rows, int cols, int ld) {
  const int stored_cols = t == CUBLAS_OP_N ? cols : rows;
  return size_t(ld) * size_t(stored_cols - 1) + size_t(t == CUBLAS_OP_N ? rows : cols);
}

size_t element_bytes(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

std::vector<float> as_float(const void* p, cudaDataType t, size_t n) {
  std::vector<float> out(n);
  if (t == CUDA_R_32F) {
    std::memcpy(out.data(), p, n * 4);
  } else {
    const auto* h = static_cast<const uint16_t*>(p);
    for (size_t i = 0; i < n; ++i)
      out[i] = t == CUDA_R_16BF ? dualpath::gpu::bf16_to_float(h[i]) : dualpath::gpu::fp16_to_float(h[i]);
  }
  return out;
}

}  // namespace

cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const void* A,
                    cudaDataType at, int lda, const void* B, cudaDataType bt, int ldb, float beta, void* C,
                    cudaDataType ct, int ldc, cublasComputeType_t compute) {
  if (m < 0 || n < 0 || k < 0 || ct != CUDA_R_32F || compute != CUBLAS_COMPUTE_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  if (lda < (ta == CUBLAS_OP_N ? m : k) || ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m)
    return CUBLAS_STATUS_INVALID_VALUE;
  const size_t na = k ? stored_elements(ta, m, k, lda) : 0, nb = k ? stored_elements(tb, k, n, ldb) : 0,
               nc = size_t(ldc) * size_t(n - 1) + size_t(m);
  if ((na && !is_device(A, na * element_bytes(at))) || (nb && !is_device(B, nb * element_bytes(bt))) ||
      !is_device(C, nc * 4)) {
    fail(cudaErrorIllegalAddress, "cublasGemmEx: an operand lies outside device memory");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const auto a = as_float(A, at, na), b = as_float(B, bt, nb);
  cblas_sgemm(CblasColMajor, ta == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
              tb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta,
              static_cast<float*>(C), ldc);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace cudashim
