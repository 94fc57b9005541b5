// Parallel.h - the CPU kernels' threads: one OpenMP pool per process, shared with the matmuls
// (OpenBLAS runs single-threaded inside the kernels' own split, so the two never compete for
// the cores). A run with one device in the process uses every core; several devices in one
// process (the threads backend) are the parallelism themselves and each kernel runs on its
// device's thread (setKernelThreads(1)).
//
// Results never depend on the number of threads: work is split in fixed chunks (a chunk's
// size depends on the problem, never on the threads), and a reduction adds its chunks'
// partial sums in chunk order.
#pragma once
#include "runtime/Kernels.h" // kernelThreads()

#include <cstdint>

namespace hspmd::runtime::kernels {

/// Calls f(begin, end) for the chunks [k * grain, min(n, (k + 1) * grain)) of [0, n), in
/// parallel when there is more than one chunk and more than one thread. f must not throw.
template <typename F> void parallelFor(int64_t n, int64_t grain, F &&f) {
  if (n <= 0)
    return;
  grain = grain < 1 ? 1 : grain;
  const int64_t chunks = (n + grain - 1) / grain;
  const int threads = kernelThreads();
  if (chunks == 1 || threads == 1) {
    for (int64_t c = 0; c < chunks; ++c)
      f(c * grain, c * grain + grain < n ? c * grain + grain : n);
    return;
  }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t c = 0; c < chunks; ++c)
    f(c * grain, c * grain + grain < n ? c * grain + grain : n);
}

/// A chunk size for n elements of work `cost` each (in about nanoseconds): chunks large enough
/// that starting one costs little next to it, at most `n`.
inline int64_t grainFor(int64_t n, int64_t cost) {
  const int64_t perChunk = 32768 / (cost < 1 ? 1 : cost);
  return perChunk < 1 ? 1 : perChunk > n ? (n < 1 ? 1 : n) : perChunk;
}

} // namespace hspmd::runtime::kernels
