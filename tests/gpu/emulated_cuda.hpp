#pragma once
// The cuda backend built over the SIMT emulator (emulated_cuda.cpp): same sources, no GPU needed.
#include <cstddef>
#include <functional>
#include <memory>

#include "gpu/backend.hpp"
#include "gpu/dense_model.hpp"

namespace dualpath::gpu {
std::unique_ptr<compute_backend> make_emulated_cuda_backend(dense_model model, int device);

// Device memory for tests that place KV on the device themselves: the real runtime's or the emulator's.
struct device_memory {
  std::function<void*(const void* host, size_t bytes)> upload;  // allocate and copy in
  std::function<void(void*)> release;
};
device_memory emulated_device_memory();
}  // namespace dualpath::gpu
