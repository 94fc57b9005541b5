// KernelSupport.cuh - what the kernel headers (runtime/gpu/*.cuh) share: the tensors an op
// takes, and check(), which turns a CUDA error into a KernelError. Under nvcc check() is
// Kernels.cu's; on the host (runtime/gpu/Emulation.h) the emulated calls' errors.
#pragma once

#include "runtime/Kernels.h"
#include "runtime/gpu/Emulation.h"

#include <span>
#include <string>

#ifdef __CUDACC__
#include <cuda_runtime.h>
#endif

namespace hspmd::runtime::gpu {

using In = std::span<const TensorView>;

#ifdef __CUDACC__
void check(cudaError_t status, const char *what);
#else
inline void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw KernelError(std::string(what) + ": " + cudaGetErrorString(status));
}
#endif

} // namespace hspmd::runtime::gpu
