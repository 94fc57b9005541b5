// Emulation.h - CUDA kernels of a header (runtime/gpu/TiledAttention.cuh) compiled by the host
// compiler and run on CPU threads, so that their indexing, masking and synchronisation are
// tested on machines without a GPU (CI). Under nvcc, HSPMD_KERNEL, HSPMD_DEVICE and
// HSPMD_HOST_DEVICE are __global__, __device__ and both, and nothing else here is used; elsewhere each block runs as
// blockDim std::threads with its own shared memory, __syncthreads() a barrier of them, and atomicAdd an atomic add:
// what a kernel computes is what the GPU computes, up to the order of its atomic adds. What this does not show: speed,
// memory limits, warp-level behaviour (no kernel here uses warp intrinsics). A kernel whose threads do not all reach a
// __syncthreads() hangs here, as it may on a GPU.
#pragma once

#ifdef __CUDACC__

#define HSPMD_KERNEL __global__
#define HSPMD_DEVICE __device__
#define HSPMD_HOST_DEVICE __host__ __device__
#define HSPMD_SHARED_FLOATS(name) extern __shared__ float name[]

#else

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <math.h>
#include <thread>
#include <vector>

#define HSPMD_KERNEL
#define HSPMD_DEVICE
#define HSPMD_HOST_DEVICE
#define HSPMD_SHARED_FLOATS(name) float *name = ::hspmd::runtime::gpu::emulation::sharedMemory

namespace hspmd::runtime::gpu {

struct EmulatedDim3 {
  unsigned x = 1, y = 1, z = 1;
};

// The built-in variables, per emulated thread.
inline thread_local EmulatedDim3 threadIdx, blockIdx, blockDim, gridDim;

namespace emulation {
inline thread_local float *sharedMemory = nullptr;
inline thread_local std::barrier<> *block = nullptr;
} // namespace emulation

inline void __syncthreads() {
  emulation::block->arrive_and_wait();
}

inline float atomicAdd(float *at, float value) {
  return std::atomic_ref<float>(*at).fetch_add(value);
}

namespace emulation {

/// Runs `kernel(args...)` as `blocks` blocks of `threads` threads with `sharedBytes` of
/// (zeroed) dynamic shared memory each, one block after another.
template <typename Kernel, typename... Args>
void launch(unsigned blocks, unsigned threads, size_t sharedBytes, Kernel kernel, const Args &...args) {
  for (unsigned b = 0; b < blocks; ++b) {
    std::vector<float> shared(sharedBytes / sizeof(float) + 1, 0.0f);
    std::barrier<> barrier(threads);
    std::vector<std::thread> team;
    team.reserve(threads);
    for (unsigned t = 0; t < threads; ++t)
      team.emplace_back([&, t] {
        threadIdx = {t, 0, 0};
        blockIdx = {b, 0, 0};
        blockDim = {threads, 1, 1};
        gridDim = {blocks, 1, 1};
        sharedMemory = shared.data();
        block = &barrier;
        kernel(args...);
      });
    for (std::thread &thread : team)
      thread.join();
  }
}

} // namespace emulation
} // namespace hspmd::runtime::gpu

#endif
