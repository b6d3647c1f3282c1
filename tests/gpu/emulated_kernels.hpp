#pragma once
// The cuda kernels' host launchers as built over the SIMT emulator (namespace dualpath::gpu::simt_cuda), with
// the CUDA vocabulary of the shim. For test files that do not include the real CUDA headers.
#define DUALPATH_SIMT_EMULATION 1
#include "cuda_shim.hpp"

#define cuda simt_cuda
#include "gpu/cuda/kernels.cuh"
#undef cuda
