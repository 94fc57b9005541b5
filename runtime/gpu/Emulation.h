// Emulation.h - CUDA kernels written in headers (runtime/gpu/*.cuh), compiled by nvcc for the GPU
// and by the host compiler to run on CPU threads, so that their indexing, masking and
// synchronisation are tested on machines without a GPU (CI). A kernel is HSPMD_KERNEL, its
// helpers HSPMD_DEVICE (or HSPMD_HOST_DEVICE), its shared memory HSPMD_SHARED_FLOATS (dynamic)
// or HSPMD_SHARED (an array), and it is launched by launchKernel(blocks, threads, shared,
// stream, kernel, args...): under nvcc, __global__, __device__, __shared__ and <<<...>>>.
//
// On the host a block's threads are fibers of the calling thread (ucontext; std::threads under
// the sanitizers), each run until its next barrier in turn: __syncthreads() and each half of
// __shfl_down_sync (an exchange within each warp of 32) are barriers. A kernel that met no
// barrier when it first ran runs its threads one after another from then on (one that later
// reaches a barrier throws std::logic_error). Blocks run one after another, each with its own
// shared memory; atomicAdd is an atomic add. The few CUDA runtime calls the launches make
// (cudaMallocAsync, cudaMemsetAsync, cudaMemcpyAsync, ...) act on host memory, and a stream is
// nothing. What a kernel computes is what the GPU computes, up to the order of its atomic adds.
// What this does not show: speed, the GPU's memory limits, and what depends on a GPU's
// scheduling (a barrier left out may pass here).
#pragma once

#include <cstddef>
#include <cstdint>

#ifdef __CUDACC__

#define HSPMD_KERNEL __global__
#define HSPMD_DEVICE __device__
#define HSPMD_HOST_DEVICE __host__ __device__
#define HSPMD_SHARED_FLOATS(name) extern __shared__ __align__(128) float name[]
#define HSPMD_SHARED(type, name, count) __shared__ type name[count]

#include <cuda_bf16.h>
#include <mma.h>
#include <type_traits>

namespace hspmd::runtime::gpu {

/// A warp's 16 x 16 tile of a product on tensor cores: c (f32, row-major, `ldc` a row) =
/// a b, plus what c holds with `accumulate`, for a 16 x k and b k x 16 in bf16 (their bits),
/// each row-major or, with `aColumns`/`bColumns`, column-major (a transposed matrix read where
/// it lies). Every lane of the warp calls it; it synchronizes the warp before (the lanes' writes
/// to a, b and c are seen) and after (c is written for every lane). wmma's rules: k a multiple
/// of 16, every pointer 32-byte aligned, lda and ldb multiples of 8, ldc of 4 (the emulation
/// checks them).
template <bool aColumns, bool bColumns>
__device__ inline void warpProduct(const uint16_t *a, int lda, const uint16_t *b, int ldb, float *c, int ldc, int k,
                                   bool accumulate) {
#if __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  using ALayout = std::conditional_t<aColumns, wmma::col_major, wmma::row_major>;
  using BLayout = std::conditional_t<bColumns, wmma::col_major, wmma::row_major>;
  __syncwarp();
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> sum;
  if (accumulate)
    wmma::load_matrix_sync(sum, c, ldc, wmma::mem_row_major);
  else
    wmma::fill_fragment(sum, 0.0f);
  const auto *as = reinterpret_cast<const __nv_bfloat16 *>(a), *bs = reinterpret_cast<const __nv_bfloat16 *>(b);
  for (int i = 0; i < k; i += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, ALayout> left;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, BLayout> right;
    wmma::load_matrix_sync(left, as + (aColumns ? static_cast<int64_t>(i) * lda : i), lda);
    wmma::load_matrix_sync(right, bs + (bColumns ? i : static_cast<int64_t>(i) * ldb), ldb);
    wmma::mma_sync(sum, left, right, sum);
  }
  wmma::store_matrix_sync(c, sum, ldc, wmma::mem_row_major);
  __syncwarp();
#else
  __trap(); // bf16 tensor cores need compute capability 8.0 (tensorCores() says where they are)
#endif
}

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
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <math.h>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

// A block's threads are fibers of one OS thread (Boost.Context's, which switch stacks without a
// system call: glibc's swapcontext makes one to save the signal mask, and took four fifths of
// an emulated training's time), each run until its next barrier in turn, except under the
// sanitizers, which do not follow a switched stack: there each is an std::thread, and a barrier
// an std::barrier (slower by about 50 times).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HSPMD_EMULATION_THREADS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HSPMD_EMULATION_THREADS 1
#endif
#endif
#ifndef HSPMD_EMULATION_THREADS
#include <boost/context/fiber.hpp>
#endif

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

namespace emulation {

// The fibers of the block being run (none with HSPMD_EMULATION_THREADS).
#ifndef HSPMD_EMULATION_THREADS
struct Fiber {
  boost::context::fiber context; // where the fiber goes on from (empty once it is done)
  boost::context::fiber back;    // in the fiber: where the scheduler goes on from
  size_t staticUsed = 0;
  bool done = false;
};
#else
struct Fiber {
  size_t staticUsed = 0;
  bool done = false;
};
#endif
struct FiberBlock {
  std::vector<Fiber> fibers;
  Fiber *current = nullptr;
};
inline thread_local FiberBlock *fibers = nullptr;
inline constexpr size_t kFiberStack = 256 * 1024;
// The fibers' stacks, kept from block to block (their pages are touched only as they are used).
inline thread_local std::vector<std::unique_ptr<char[]>> fiberStacks;

/// The calling thread's wait at a barrier: its fiber yields to the scheduler, which runs the
/// others up to the same barrier before it again; or its std::barrier.
inline thread_local bool straight = false;  // the block's threads run one after another, no barrier
inline std::atomic<int64_t> barriersMet{0}; // barriers waited at, by every launch so far

inline void barrier(std::barrier<> &threads) {
  if (straight) // a kernel that synchronized nowhere when it first ran synchronizes now
    throw std::logic_error("a kernel run without barriers reached one (runtime/gpu/Emulation.h)");
  ++barriersMet;
#ifndef HSPMD_EMULATION_THREADS
  if (fibers) {
    Fiber &me = *fibers->current;
    me.back = std::move(me.back).resume();
    return;
  }
#endif
  threads.arrive_and_wait();
}

#ifndef HSPMD_EMULATION_THREADS
// One of fiberStacks as a fiber's stack (Boost.Context's StackAllocator): nothing is allocated
// or freed a block.
struct KeptStack {
  char *memory;
  boost::context::stack_context allocate() {
    boost::context::stack_context stack;
    stack.size = kFiberStack;
    stack.sp = memory + kFiberStack;
    return stack;
  }
  void deallocate(boost::context::stack_context &) noexcept {}
};

/// Runs `body` as `n` fibers, `enter(t)` setting thread t's variables before each of its turns.
inline void runFibers(unsigned n, const std::function<void(unsigned)> &enter, const std::function<void()> &body) {
  FiberBlock fiberBlock;
  fiberBlock.fibers.resize(n);
  while (fiberStacks.size() < n)
    fiberStacks.emplace_back(new char[kFiberStack]);
  for (unsigned t = 0; t < n; ++t) {
    Fiber &fiber = fiberBlock.fibers[t];
    fiber.context = boost::context::fiber(std::allocator_arg, KeptStack{fiberStacks[t].get()},
                                          [&fiber, &body](boost::context::fiber &&scheduler) {
                                            fiber.back = std::move(scheduler);
                                            body();
                                            fiber.done = true;
                                            return std::move(fiber.back);
                                          });
  }
  FiberBlock *const outer = fibers;
  fibers = &fiberBlock;
  // Each fiber runs until its next barrier (or its end), in turn: a round of them takes every
  // thread of the block to the same barrier.
  for (bool running = true; running;) {
    running = false;
    for (unsigned t = 0; t < n; ++t) {
      Fiber &fiber = fiberBlock.fibers[t];
      if (fiber.done)
        continue;
      enter(t);
      staticUsed = fiber.staticUsed;
      fiberBlock.current = &fiber;
      fiber.context = std::move(fiber.context).resume();
      fiber.staticUsed = staticUsed;
      running = running || !fiber.done;
    }
  }
  fibers = outer;
}
#endif

} // namespace emulation

inline void __syncthreads() {
  emulation::barrier(*emulation::block);
}

inline float atomicAdd(float *at, float value) {
  return std::atomic_ref<float>(*at).fetch_add(value);
}

inline int atomicAdd(int *at, int value) {
  return std::atomic_ref<int>(*at).fetch_add(value);
}

inline void __syncwarp(unsigned = 0xffffffffu) {
  emulation::barrier(emulation::warp->sync);
}

template <typename T> T __shfl_down_sync(unsigned, T value, unsigned offset) {
  static_assert(sizeof(T) <= 8, "a warp shuffle moves up to 8 bytes");
  emulation::Warp &w = *emulation::warp;
  const unsigned lane = threadIdx.x % 32;
  std::memcpy(w.slots[lane], &value, sizeof(T));
  emulation::barrier(w.sync);
  T out = value;
  if (lane + offset < w.size)
    std::memcpy(&out, w.slots[lane + offset], sizeof(T));
  emulation::barrier(w.sync); // nobody writes its slot again before every partner has read it
  return out;
}

namespace emulation {

inline float bf16Value(uint16_t bits) {
  const uint32_t word = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

/// A rule of the GPU's that a kernel broke (an alignment, ...) stops the program with `rule` (as
/// staticShared's overflow does): an exception cannot leave a fiber or a thread of the block.
inline void require(bool holds, const char *rule) {
  if (!holds) {
    std::fprintf(stderr, "%s (a rule of the GPU's; runtime/gpu/Emulation.h)\n", rule);
    std::abort();
  }
}

} // namespace emulation

/// The GPU's warpProduct (above, under __CUDACC__): lane 0 computes the tile between two
/// barriers of the warp, in f32 sums of exact products, k in order (tensor cores may sum in
/// another order). wmma's rules are checked, so that what passes here loads on the GPU.
template <bool aColumns, bool bColumns>
inline void warpProduct(const uint16_t *a, int lda, const uint16_t *b, int ldb, float *c, int ldc, int k,
                        bool accumulate) {
  auto aligned = [](const void *at) { return reinterpret_cast<uintptr_t>(at) % 32 == 0; };
  emulation::require(k % 16 == 0 && k > 0, "warpProduct: k must be a positive multiple of 16");
  emulation::require(aligned(a) && aligned(b) && aligned(c), "warpProduct: pointers must be 32-byte aligned");
  emulation::require(lda % 8 == 0 && ldb % 8 == 0 && ldc % 4 == 0,
                     "warpProduct: lda and ldb must be multiples of 8 elements, ldc of 4");
  __syncwarp();
  if (threadIdx.x % 32 == 0)
    for (int r = 0; r < 16; ++r)
      for (int col = 0; col < 16; ++col) {
        float sum = accumulate ? c[r * ldc + col] : 0.0f;
        for (int i = 0; i < k; ++i)
          sum += emulation::bf16Value(aColumns ? a[r + i * lda] : a[r * lda + i]) *
                 emulation::bf16Value(bColumns ? b[i + col * ldb] : b[i * ldb + col]);
        c[r * ldc + col] = sum;
      }
  __syncwarp();
}

// The CUDA runtime calls the kernels' launches make: host memory stands for the GPU's, and a
// stream is nothing (everything runs at once, in order).
struct EmulatedStream;
using cudaStream_t = EmulatedStream *;
enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2 };

namespace emulation {
/// The emulated GPU: its compute capability's major number and the dynamic shared memory a block
/// may ask for. An H100's (9, 227 KiB) unless a test sets another's.
struct DeviceProperties {
  int major = 9;
  int sharedOptIn = 227 * 1024;
};
inline DeviceProperties device;
} // namespace emulation
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
namespace emulation {
/// Times a kernel's host code waited for the GPU (cudaStreamSynchronize), and copied host memory
/// to the GPU or back (cudaMemcpyAsync): a step that is to run as a CUDA graph has none (tests
/// count them).
inline std::atomic<int64_t> hostWaits{0}, hostCopies{0};
} // namespace emulation
inline cudaError_t cudaMemcpyAsync(void *to, const void *from, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
  if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToHost)
    ++emulation::hostCopies;
  std::memmove(to, from, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) {
  ++emulation::hostWaits;
  return cudaSuccess;
}
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize };
/// Refuses more shared memory than the emulated GPU gives a block (a launch here gets whatever
/// it asks for, but a kernel that asks more than the GPU has must not pass).
inline cudaError_t cudaFuncSetAttribute(const void *, cudaFuncAttribute, int bytes) {
  return bytes <= emulation::device.sharedOptIn ? cudaSuccess : cudaErrorInvalidValue;
}
inline cudaError_t cudaGetDevice(int *device) {
  *device = 0;
  return cudaSuccess;
}
enum cudaDeviceAttr { cudaDevAttrComputeCapabilityMajor, cudaDevAttrMaxSharedMemoryPerBlockOptin };
inline cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attribute, int) {
  *value = attribute == cudaDevAttrComputeCapabilityMajor ? emulation::device.major : emulation::device.sharedOptIn;
  return cudaSuccess;
}
inline cudaError_t cudaGetLastError() {
  return cudaSuccess;
}
inline const char *cudaGetErrorString(cudaError_t status) {
  return status == cudaSuccess ? "no error" : status == cudaErrorInvalidValue ? "invalid argument" : "out of memory";
}

namespace emulation {

/// The most blocks a launch runs (0: as many as it asks for). Every kernel of runtime/gpu/ walks
/// its work in grid-stride loops, so that fewer blocks compute the same; a whole training run on
/// CPU threads (tests/unit/support/EmulatedGpu.cpp) caps them to stay quick.
inline std::atomic<int64_t> blockCap{0};

/// Caps launches at `blocks` blocks while it lives.
class BlockCap {
public:
  explicit BlockCap(int64_t blocks) : previous_(blockCap.exchange(blocks)) {}
  ~BlockCap() { blockCap = previous_; }
  BlockCap(const BlockCap &) = delete;
  BlockCap &operator=(const BlockCap &) = delete;

private:
  int64_t previous_;
};

/// Runs `kernel(args...)` as `blocks` blocks of `threads` threads with `sharedBytes` of
/// (zeroed) dynamic shared memory each, one block after another.
template <typename Kernel, typename... Args>
void launch(int64_t blocks, int64_t threads, size_t sharedBytes, Kernel kernel, const Args &...args) {
  if (const int64_t cap = blockCap.load(); cap > 0)
    blocks = std::min(blocks, cap);
  const auto n = static_cast<unsigned>(threads);
  // Whether the kernel synchronizes: unknown until it first runs (as a block of fibers or
  // threads); one that met no barrier then runs its threads one after another from then on,
  // which is what makes a training run here quick.
  static std::mutex kernelsMutex;
  static std::map<const void *, bool> synchronizes;
  const void *key = reinterpret_cast<const void *>(kernel);
  std::optional<bool> known;
  {
    const std::lock_guard lock(kernelsMutex);
    if (const auto it = synchronizes.find(key); it != synchronizes.end())
      known = it->second;
  }
  const int64_t barriersBefore = barriersMet.load();
  for (unsigned b = 0; b < static_cast<unsigned>(blocks); ++b) {
    // Aligned as the GPU's (warpProduct's loads need 32 bytes; a vector's floats have 16).
    const size_t sharedFloats = (sharedBytes / sizeof(float) + 1 + 31) / 32 * 32;
    const std::unique_ptr<float[], void (*)(void *)> shared(
        static_cast<float *>(std::aligned_alloc(128, sharedFloats * sizeof(float))), std::free);
    std::fill_n(shared.get(), sharedFloats, 0.0f);
    auto area = std::make_unique<unsigned char[]>(kStaticBytes);
    std::barrier<> barrier(n);
    std::vector<std::unique_ptr<Warp>> warps;
    for (unsigned w = 0; w * 32 < n; ++w)
      warps.push_back(std::make_unique<Warp>(std::min(32u, n - w * 32)));
    auto enter = [&, b](unsigned t) {
      threadIdx = {t, 0, 0};
      blockIdx = {b, 0, 0};
      blockDim = {n, 1, 1};
      gridDim = {static_cast<unsigned>(blocks), 1, 1};
      sharedMemory = shared.get();
      staticArea = area.get();
      block = &barrier;
      warp = warps[t / 32].get();
    };
    if (known && !*known) { // a kernel with no barrier: its threads one after another
      straight = true;
      for (unsigned t = 0; t < n; ++t) {
        enter(t);
        staticUsed = 0;
        try {
          kernel(args...);
        } catch (...) {
          straight = false;
          throw;
        }
      }
      straight = false;
      continue;
    }
#ifdef HSPMD_EMULATION_THREADS
    std::vector<std::thread> team;
    team.reserve(n);
    for (unsigned t = 0; t < n; ++t)
      team.emplace_back([&, t] {
        enter(t);
        staticUsed = 0;
        kernel(args...);
      });
    for (std::thread &thread : team)
      thread.join();
#else
    const std::function<void()> body = [&] { kernel(args...); };
    runFibers(n, enter, body);
#endif
  }
  // Another thread's launch may have met barriers meanwhile: a kernel is taken to synchronize
  // when any did, which only keeps it on the slower way.
  if (!known && blocks > 0) {
    const std::lock_guard lock(kernelsMutex);
    synchronizes.emplace(key, barriersMet.load() != barriersBefore);
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

namespace hspmd::runtime::gpu {

/// Whether this GPU has bf16 tensor cores (warpProduct: compute capability 8.0 and up) and gives
/// a block `sharedBytes` of dynamic shared memory when asked (on CPU threads: the emulated GPU's,
/// emulation::device).
inline bool tensorCores(size_t sharedBytes) {
  int device = 0, major = 0, optIn = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&optIn, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return major >= 8 && sharedBytes <= static_cast<size_t>(optIn);
}

} // namespace hspmd::runtime::gpu
