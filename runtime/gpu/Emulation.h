// Emulation.h - CUDA kernels written in headers (runtime/gpu/*.cuh), compiled by nvcc for the GPU
// and by the host compiler to run on CPU threads, so that their indexing, masking and
// synchronisation are tested on machines without a GPU (CI). A kernel is HSPMD_KERNEL, its
// helpers HSPMD_DEVICE (or HSPMD_HOST_DEVICE), its shared memory HSPMD_SHARED_FLOATS (dynamic)
// or HSPMD_SHARED (an array), and it is launched by launchKernel(blocks, threads, shared,
// stream, kernel, args...): under nvcc, __global__, __device__, __shared__ and <<<...>>>.
//
// On the host each block runs as blockDim std::threads with its own shared memory,
// __syncthreads() a barrier of them, __shfl_down_sync an exchange within each warp of 32, and
// atomicAdd an atomic add; blocks run one after another. The few CUDA runtime calls the
// launches make (cudaMallocAsync, cudaMemsetAsync, cudaMemcpyAsync, ...) act on host memory,
// and a stream is nothing. What a kernel computes is what the GPU computes, up to the order of
// its atomic adds. What this does not show: speed, the GPU's memory limits, and what depends on
// a GPU's scheduling (a barrier left out may pass here). A kernel whose threads do not all reach
// a __syncthreads() hangs here, as it may on a GPU.
#pragma once

#include <cstddef>
#include <cstdint>

#ifdef __CUDACC__

#define HSPMD_KERNEL __global__
#define HSPMD_DEVICE __device__
#define HSPMD_HOST_DEVICE __host__ __device__
#define HSPMD_SHARED_FLOATS(name) extern __shared__ float name[]
#define HSPMD_SHARED(type, name, count) __shared__ type name[count]

namespace hspmd::runtime::gpu {
/// `kernel<<<blocks, threads, shared, stream>>>(args...)`, written so that the host compiler
/// runs the same line on CPU threads (below).
template <typename... Params, typename... Args>
void launchKernel(int64_t blocks, int64_t threads, size_t shared, cudaStream_t stream, void (*kernel)(Params...),
                  const Args &...args) {
  kernel<<<static_cast<unsigned>(blocks), static_cast<unsigned>(threads), shared, stream>>>(args...);
}
} // namespace hspmd::runtime::gpu

#else

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <math.h>
#include <memory>
#include <thread>
#include <vector>

#define HSPMD_KERNEL
#define HSPMD_DEVICE
#define HSPMD_HOST_DEVICE
#define HSPMD_SHARED_FLOATS(name) float *name = ::hspmd::runtime::gpu::emulation::sharedMemory
#define HSPMD_SHARED(type, name, count) type *name = ::hspmd::runtime::gpu::emulation::staticShared<type>(count)

namespace hspmd::runtime::gpu {

struct EmulatedDim3 {
  unsigned x = 1, y = 1, z = 1;
};

// The built-in variables, per emulated thread.
inline thread_local EmulatedDim3 threadIdx, blockIdx, blockDim, gridDim;

namespace emulation {

// A warp's threads exchanging values (__shfl_down_sync): each writes its value to its slot, and
// once all have, reads its partner's.
struct Warp {
  explicit Warp(unsigned lanes) : size(lanes), sync(lanes) {}
  unsigned size;
  std::barrier<> sync;
  alignas(8) unsigned char slots[32][8] = {};
};

inline thread_local float *sharedMemory = nullptr;       // the block's dynamic shared memory
inline thread_local unsigned char *staticArea = nullptr; // the block's __shared__ arrays
inline thread_local size_t staticUsed = 0;               // of staticArea, by this thread's declarations so far
inline thread_local std::barrier<> *block = nullptr;
inline thread_local Warp *warp = nullptr;
inline constexpr size_t kStaticBytes = 16 * 1024;

/// A kernel's `__shared__ T name[count]`: every thread of a block declares its arrays in the
/// same order, so each gets the same place in the block's area.
template <typename T> T *staticShared(size_t count) {
  staticUsed = (staticUsed + 15) / 16 * 16;
  T *at = reinterpret_cast<T *>(staticArea + staticUsed);
  staticUsed += count * sizeof(T);
  if (staticUsed > kStaticBytes)
    std::abort(); // more __shared__ arrays than the emulation holds: raise kStaticBytes
  return at;
}

} // namespace emulation

inline void __syncthreads() {
  emulation::block->arrive_and_wait();
}

inline float atomicAdd(float *at, float value) {
  return std::atomic_ref<float>(*at).fetch_add(value);
}

template <typename T> T __shfl_down_sync(unsigned, T value, unsigned offset) {
  static_assert(sizeof(T) <= 8, "a warp shuffle moves up to 8 bytes");
  emulation::Warp &w = *emulation::warp;
  const unsigned lane = threadIdx.x % 32;
  std::memcpy(w.slots[lane], &value, sizeof(T));
  w.sync.arrive_and_wait();
  T out = value;
  if (lane + offset < w.size)
    std::memcpy(&out, w.slots[lane + offset], sizeof(T));
  w.sync.arrive_and_wait(); // nobody writes its slot again before every partner has read it
  return out;
}

// The CUDA runtime calls the kernels' launches make: host memory stands for the GPU's, and a
// stream is nothing (everything runs at once, in order).
struct EmulatedStream;
using cudaStream_t = EmulatedStream *;
enum cudaError_t { cudaSuccess = 0, cudaErrorMemoryAllocation = 2 };
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice };
inline cudaError_t cudaMallocAsync(void **at, size_t bytes, cudaStream_t) {
  *at = std::malloc(std::max<size_t>(bytes, 1));
  return *at ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFreeAsync(void *at, cudaStream_t) {
  std::free(at);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void *at, int value, size_t bytes, cudaStream_t) {
  std::memset(at, value, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void *to, const void *from, size_t bytes, cudaMemcpyKind, cudaStream_t) {
  std::memmove(to, from, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return cudaSuccess;
}
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize };
inline cudaError_t cudaFuncSetAttribute(const void *, cudaFuncAttribute, int) {
  return cudaSuccess; // a block's shared memory here is whatever it asks for
}
inline cudaError_t cudaGetLastError() {
  return cudaSuccess;
}
inline const char *cudaGetErrorString(cudaError_t status) {
  return status == cudaSuccess ? "no error" : "out of memory";
}

namespace emulation {

/// Runs `kernel(args...)` as `blocks` blocks of `threads` threads with `sharedBytes` of
/// (zeroed) dynamic shared memory each, one block after another.
template <typename Kernel, typename... Args>
void launch(int64_t blocks, int64_t threads, size_t sharedBytes, Kernel kernel, const Args &...args) {
  const auto n = static_cast<unsigned>(threads);
  for (unsigned b = 0; b < static_cast<unsigned>(blocks); ++b) {
    std::vector<float> shared(sharedBytes / sizeof(float) + 1, 0.0f);
    auto area = std::make_unique<unsigned char[]>(kStaticBytes);
    std::barrier<> barrier(n);
    std::vector<std::unique_ptr<Warp>> warps;
    for (unsigned w = 0; w * 32 < n; ++w)
      warps.push_back(std::make_unique<Warp>(std::min(32u, n - w * 32)));
    std::vector<std::thread> team;
    team.reserve(n);
    for (unsigned t = 0; t < n; ++t)
      team.emplace_back([&, t] {
        threadIdx = {t, 0, 0};
        blockIdx = {b, 0, 0};
        blockDim = {n, 1, 1};
        gridDim = {static_cast<unsigned>(blocks), 1, 1};
        sharedMemory = shared.data();
        staticArea = area.get();
        staticUsed = 0;
        block = &barrier;
        warp = warps[t / 32].get();
        kernel(args...);
      });
    for (std::thread &thread : team)
      thread.join();
  }
}

} // namespace emulation

/// `kernel<<<blocks, threads, shared, stream>>>(args...)` on CPU threads (the stream is nothing
/// here: everything runs at once, in order).
template <typename... Params, typename... Args>
void launchKernel(int64_t blocks, int64_t threads, size_t shared, cudaStream_t, void (*kernel)(Params...),
                  const Args &...args) {
  emulation::launch(blocks, threads, shared, kernel, args...);
}

} // namespace hspmd::runtime::gpu

#endif
