// KernelTable.cuh - the GPU kernels of every op but the products (Kernels.cu runs those through
// cuBLAS), each with its launch: kernelTable(), the op's name to what runs it on a stream. Layout
// ops and attention are LayoutKernels.cuh's and AttentionKernels.cuh's. Each kernel follows its CPU kernel in
// runtime/kernels/ (same formulas, sums in double where the CPU's are), so that fp32 results
// agree to rounding: elementwise ops with numpy broadcasting as grid-stride loops
// (ElementwiseKernels.cuh), norms and cross-entropy one block per row, parameter gradients of
// the norms one thread per column adding rows in order. The elementwise kernels, the norms,
// softmax, cross-entropy and the embedding read and write bf16 activations as they are
// (normTakes, rowKernelTakes: the widened kernel's result, rounded).
//
// Compiled by nvcc for Kernels.cu, and by the host compiler for
// tests/unit/runtime/GpuEmulatedKernelsTest.cpp, which runs the table on CPU threads
// (runtime/gpu/Emulation.h: launches, shared memory, warp shuffles, and the few CUDA runtime
// calls the launches make) against the CPU kernels. Everything here is in an unnamed namespace:
// a copy for each file that includes it.
#pragma once

#include "runtime/Kernels.h"
#include "runtime/gpu/AttentionKernels.cuh"
#include "runtime/gpu/ElementwiseKernels.cuh"
#include "runtime/gpu/Emulation.h"
#include "runtime/gpu/KernelSupport.cuh"
#include "runtime/gpu/Launch.h"
#include "runtime/gpu/LayoutKernels.cuh"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <type_traits>

namespace hspmd::runtime::gpu {

/// What runs an op on a stream.
using Runner = std::function<void(const ir::AttrMap &, In, In, const KernelContext &, cudaStream_t)>;

namespace {

using kernels::expect;

// ---- elementwise (runtime/gpu/ElementwiseKernels.cuh) -------------------------------------

// Calls `call` with a null pointer to the element type `t` is stored in: f32, or bf16 (the
// elementwise kernels read and write bf16 tensors as they are).
template <typename Call> void byElementType(const TensorView &t, const char *op, const Call &call) {
  if (t.dtype == ir::DType::BF16)
    call(static_cast<Bf16Bits *>(nullptr));
  else {
    expect(t.dtype == ir::DType::F32, op, "the elementwise kernels take f32 and bf16 tensors");
    call(static_cast<float *>(nullptr));
  }
}

template <typename T> using Element = std::remove_pointer_t<T>;

template <typename F> void binary(const char *op, In in, In out, F f, cudaStream_t stream) {
  const int64_t n = out[0].numel();
  const LaunchShape shape = elementwiseLaunch(n);
  if (!shape.blocks)
    return;
  const TensorView &a = in[0], &b = in.size() > 1 ? in[1] : in[0], &y = out[0];
  const BroadcastStrides s = broadcastStrides(a.shape, b.shape, y.shape);
  byElementType(a, op, [&](auto *ta) {
    byElementType(b, op, [&](auto *tb) {
      byElementType(y, op, [&](auto *ty) {
        using A = Element<decltype(ta)>;
        using B = Element<decltype(tb)>;
        using Y = Element<decltype(ty)>;
        launchKernel(shape.blocks, shape.threads, 0, stream, binaryKernel<A, B, Y, F>, static_cast<const A *>(a.data),
                     static_cast<const B *>(b.data), static_cast<Y *>(y.data), n, s, f);
      });
    });
  });
}

template <typename F> void unary(const char *op, In in, In out, F f, cudaStream_t stream) {
  const int64_t n = out[0].numel();
  const LaunchShape shape = elementwiseLaunch(n);
  if (!shape.blocks)
    return;
  byElementType(in[0], op, [&](auto *tx) {
    byElementType(out[0], op, [&](auto *ty) {
      using X = Element<decltype(tx)>;
      using Y = Element<decltype(ty)>;
      launchKernel(shape.blocks, shape.threads, 0, stream, unaryKernel<X, Y, F>, static_cast<const X *>(in[0].data),
                   static_cast<Y *>(out[0].data), n, f);
    });
  });
}

// ---- rows: norms, softmax, cross-entropy ------------------------------------------------

// The sum of `value` over the block's threads (every thread gets it); `shared` holds 32 doubles.
HSPMD_DEVICE inline double blockSum(double value, double *shared) {
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_down_sync(0xffffffffu, value, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads(); // `shared` may still be read by a previous call
  if (lane == 0)
    shared[warp] = value;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < static_cast<int>((blockDim.x + 31) / 32); ++w)
    total += shared[w];
  return total;
}

HSPMD_DEVICE inline float blockMax(float value, float *shared) {
  for (int offset = 16; offset > 0; offset /= 2)
    value = fmaxf(value, __shfl_down_sync(0xffffffffu, value, offset));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();
  if (lane == 0)
    shared[warp] = value;
  __syncthreads();
  float peak = -INFINITY;
  for (int w = 0; w < static_cast<int>((blockDim.x + 31) / 32); ++w)
    peak = fmaxf(peak, shared[w]);
  return peak;
}

// Per row: its mean (0 for RMSNorm) and 1 / sqrt(variance or mean square + eps), kept for the
// parameter gradients. x, dy and y in f32 or bf16 storage (read as floats, y rounded), the
// parameters f32.
template <typename X, typename DY, typename Y>
HSPMD_KERNEL void normRowsKernel(const X *x, const float *w, const float *b, const DY *dy, Y *y, double *stats,
                                 int64_t rows, int64_t n, double eps, bool layer) {
  HSPMD_SHARED(double, shared, 32);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const X *xr = x + row * n;
    double mean = 0;
    if (layer) {
      double s = 0;
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        s += loadElement(xr[j]);
      mean = blockSum(s, shared) / static_cast<double>(n);
    }
    double s2 = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      s2 += (loadElement(xr[j]) - mean) * (loadElement(xr[j]) - mean);
    const double r = 1 / sqrt(blockSum(s2, shared) / static_cast<double>(n) + eps);
    if (stats && threadIdx.x == 0) {
      stats[2 * row] = mean;
      stats[2 * row + 1] = r;
    }
    if (!dy) {
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        storeElement(y + row * n + j,
                     static_cast<float>((loadElement(xr[j]) - mean) * r * w[j] + (layer ? b[j] : 0.0f)));
      continue;
    }
    const DY *dyr = dy + row * n;
    double sumG = 0, sumGX = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const double xhat = (loadElement(xr[j]) - mean) * r, g = static_cast<double>(loadElement(dyr[j])) * w[j];
      sumG += g;
      sumGX += g * xhat;
    }
    sumGX = blockSum(sumGX, shared);
    sumG = layer ? blockSum(sumG, shared) : 0.0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const double xhat = (loadElement(xr[j]) - mean) * r, g = static_cast<double>(loadElement(dyr[j])) * w[j];
      storeElement(y + row * n + j,
                   static_cast<float>(r * (g - sumG / static_cast<double>(n) - xhat * sumGX / static_cast<double>(n))));
    }
  }
}

// dw (and db) of a norm: one thread per column, adding the rows in order.
template <typename X, typename DY>
HSPMD_KERNEL void normParamGradKernel(const X *x, const DY *dy, const double *stats, float *dw, float *db, int64_t rows,
                                      int64_t n) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double w = 0, b = 0;
    for (int64_t row = 0; row < rows; ++row) {
      const double xhat = (loadElement(x[row * n + j]) - stats[2 * row]) * stats[2 * row + 1];
      w += loadElement(dy[row * n + j]) * xhat;
      b += loadElement(dy[row * n + j]);
    }
    dw[j] = static_cast<float>(w);
    if (db)
      db[j] = static_cast<float>(b);
  }
}

// Softmax along a dimension of extent n between `outer` and `inner` elements: one thread per
// (outer, inner) pair. X and Y: float or Bf16Bits (read exactly, written rounded).
template <typename X, typename Y>
HSPMD_KERNEL void softmaxKernel(const X *x, Y *y, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t p = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; p < outer * inner;
       p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = p / inner, i = p % inner;
    const X *xr = x + o * n * inner + i;
    Y *yr = y + o * n * inner + i;
    float peak = -INFINITY;
    for (int64_t j = 0; j < n; ++j)
      peak = fmaxf(peak, loadElement(xr[j * inner]));
    double total = 0;
    for (int64_t j = 0; j < n; ++j)
      total += exp(static_cast<double>(loadElement(xr[j * inner]) - peak));
    for (int64_t j = 0; j < n; ++j)
      storeElement(yr + j * inner,
                   static_cast<float>(exp(static_cast<double>(loadElement(xr[j * inner]) - peak)) / total));
  }
}

// A fault word (KernelContext::fault): 0, or what a kernel found wrong with its input. A
// cross-entropy's target t outside the vocabulary is 2 (t + 1) + (1 for the gradient's kernel).
HSPMD_HOST_DEVICE inline int64_t targetFault(int64_t target, bool grad) {
  return (target + 1) * 2 + (grad ? 1 : 0);
}

/// Throws the KernelError the CPU's kernel throws for the fault `word` records (none for 0).
inline void throwFault(int64_t word) {
  if (word != 0)
    expect(false, word % 2 ? "cross_entropy_grad" : "cross_entropy",
           "target " + std::to_string(word / 2 - 1) + " outside the vocabulary");
}

// Cross-entropy, one block per row: the row's loss into `rowLoss` (forward) or its gradient
// into `grad`. A target < 0 is not scored; one outside the vocabulary sets `*bad` to its
// targetFault.
// X (the logits) and G (the gradient): float or Bf16Bits.
template <typename X, typename G>
HSPMD_KERNEL void crossEntropyKernel(const X *logits, const int32_t *targets, double *rowLoss, G *grad,
                                     const float *upstream, int64_t rows, int64_t V, double tokens, int64_t *bad) {
  HSPMD_SHARED(double, shared, 32);
  HSPMD_SHARED(float, peaks, 32);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const X *xr = logits + row * V;
    const int64_t target = targets[row];
    if (target >= V) {
      if (threadIdx.x == 0)
        *bad = targetFault(target, grad != nullptr);
      continue;
    }
    if (target < 0) {
      if (grad)
        for (int64_t c = threadIdx.x; c < V; c += blockDim.x)
          storeElement(grad + row * V + c, 0.0f);
      else if (threadIdx.x == 0)
        rowLoss[row] = 0;
      continue;
    }
    float peak = -INFINITY;
    for (int64_t c = threadIdx.x; c < V; c += blockDim.x)
      peak = fmaxf(peak, loadElement(xr[c]));
    peak = blockMax(peak, peaks);
    double total = 0;
    for (int64_t c = threadIdx.x; c < V; c += blockDim.x)
      total += expf(loadElement(xr[c]) - peak);
    total = blockSum(total, shared);
    if (!grad) {
      if (threadIdx.x == 0)
        rowLoss[row] = log(total) + peak - loadElement(xr[target]);
      continue;
    }
    const double up = *upstream;
    const auto factor = static_cast<float>(up / total / tokens);
    for (int64_t c = threadIdx.x; c < V; c += blockDim.x)
      storeElement(grad + row * V + c,
                   expf(loadElement(xr[c]) - peak) * factor - (c == target ? static_cast<float>(up / tokens) : 0.0f));
  }
}

// The rows' losses added in row order (one thread: the same sum as the CPU's), over `tokens`.
HSPMD_KERNEL void lossSumKernel(const double *rowLoss, int64_t rows, double tokens, float *loss) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r)
    total += rowLoss[r];
  *loss = static_cast<float>(total / tokens);
}

// The steps of the vocabulary-parallel cross-entropy (runtime/kernels/EmbeddingAndLoss.cpp:
// the same formulas), one thread per row (per element for the gradient). X (the logits) and G
// (their gradient): float or Bf16Bits.
template <typename X> HSPMD_KERNEL void vocabMaxKernel(const X *x, float *peak, int64_t rows, int64_t V) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float m = -INFINITY;
    for (int64_t c = 0; c < V; ++c)
      m = fmaxf(m, loadElement(x[r * V + c]));
    peak[r] = m;
  }
}

template <typename X>
HSPMD_KERNEL void vocabSumsKernel(const X *x, const int32_t *targets, const float *peak, float *sums, int64_t rows,
                                  int64_t V, int64_t offset) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double total = 0;
    for (int64_t c = 0; c < V; ++c)
      total += exp(static_cast<double>(loadElement(x[r * V + c]) - peak[r]));
    sums[r] = static_cast<float>(total);
    const int64_t t = targets[r] - offset;
    sums[rows + r] = t >= 0 && t < V ? loadElement(x[r * V + t]) : 0.0f;
  }
}

// One thread: the rows' losses added in row order, as the CPU's.
HSPMD_KERNEL void vocabLossKernel(const int32_t *targets, const float *peak, const float *sums, int64_t rows,
                                  double tokens, float *loss) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r)
    if (targets[r] >= 0)
      total += log(static_cast<double>(sums[r])) + peak[r] - sums[rows + r];
  *loss = static_cast<float>(total / tokens);
}

template <typename X, typename G>
HSPMD_KERNEL void vocabGradKernel(const X *x, const int32_t *targets, const float *peak, const float *sums,
                                  const float *upstream, G *g, int64_t rows, int64_t V, int64_t offset, double tokens) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < rows * V;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = k / V, c = k % V;
    if (targets[r] < 0) {
      storeElement(g + k, 0.0f);
      continue;
    }
    const double p = exp(static_cast<double>(loadElement(x[k]) - peak[r])) / sums[r];
    storeElement(g + k, static_cast<float>(upstream[0] * (p - (c + offset == targets[r] ? 1.0 : 0.0)) / tokens));
  }
}

// ---- embedding, optimizer -------------------------------------------------------------

// The table f32 (a parameter), the rows Y: float or Bf16Bits.
template <typename Y>
HSPMD_KERNEL void embeddingKernel(const float *table, const int32_t *ids, Y *y, int64_t count, int64_t V, int64_t D,
                                  int64_t offset) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < count * D;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = k / D, d = k % D, row = ids[i] - offset;
    storeElement(y + k, row >= 0 && row < V ? table[row * D + d] : 0.0f);
  }
}

// The embedding's gradient: each row of the table sums the rows of dY whose ids name it, in the
// ids' order from 0.0f, as the CPU's loop does (so f32 results are the CPU's bit for bit), in
// O((ids + table rows) x D) work. Five steps (embeddingGrad), on int32 scratch:
//  1. counts: how many ids name each row (atomic integer adds: exact in any order);
//  2. starts: the counts' exclusive prefix sums, in one block (starts[V]: the ids in the table);
//  3. list: each id's index at its row's start plus a place taken from the row's cursor (a
//     row's ids in any order);
//  4. sorted: each row's ids in increasing order (an id's rank: how many of its row's are
//     smaller; a row named n times costs n^2 comparisons, so one id repeated 64K times in a
//     micro-batch costs about 4e9, a few milliseconds);
//  5. each table element adds its row's dY in that order.
HSPMD_KERNEL void embeddingCountKernel(const int32_t *ids, int32_t *counts, int64_t count, int64_t V, int64_t offset) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    if (const int64_t row = ids[i] - offset; row >= 0 && row < V)
      atomicAdd(counts + row, 1);
}

constexpr int kStartsThreads = 256; // a block of them sums runs of V / 256 rows

// One block of kStartsThreads: each thread sums a run of counts, the block scans the sums, and
// each thread writes its run's starts.
HSPMD_KERNEL void embeddingStartsKernel(const int32_t *counts, int32_t *starts, int64_t V) {
  HSPMD_SHARED(int32_t, partial, kStartsThreads);
  const int64_t per = (V + kStartsThreads - 1) / kStartsThreads;
  const int64_t first = threadIdx.x * per, lo = first < V ? first : V, hi = lo + per < V ? lo + per : V;
  int32_t sum = 0;
  for (int64_t r = lo; r < hi; ++r)
    sum += counts[r];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned step = 1; step < kStartsThreads; step *= 2) { // inclusive scan of the sums
    const int32_t before = threadIdx.x >= step ? partial[threadIdx.x - step] : 0;
    __syncthreads();
    partial[threadIdx.x] += before;
    __syncthreads();
  }
  int32_t at = partial[threadIdx.x] - sum;
  for (int64_t r = lo; r < hi; ++r) {
    starts[r] = at;
    at += counts[r];
  }
  if (threadIdx.x == kStartsThreads - 1)
    starts[V] = partial[threadIdx.x];
}

HSPMD_KERNEL void embeddingListKernel(const int32_t *ids, const int32_t *starts, int32_t *cursors, int32_t *list,
                                      int64_t count, int64_t V, int64_t offset) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    if (const int64_t row = ids[i] - offset; row >= 0 && row < V)
      list[starts[row] + atomicAdd(cursors + row, 1)] = static_cast<int32_t>(i);
}

HSPMD_KERNEL void embeddingOrderKernel(const int32_t *ids, const int32_t *starts, const int32_t *list, int32_t *sorted,
                                       int64_t V, int64_t offset) {
  for (int64_t q = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; q < starts[V];
       q += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int32_t i = list[q];
    const int64_t row = ids[i] - offset;
    int32_t rank = 0;
    for (int32_t p = starts[row]; p < starts[row + 1]; ++p)
      rank += list[p] < i;
    sorted[starts[row] + rank] = i;
  }
}

// dY: float or Bf16Bits; the table's gradient f32.
template <typename DY>
HSPMD_KERNEL void embeddingSumKernel(const int32_t *starts, const int32_t *sorted, const DY *dy, float *g, int64_t V,
                                     int64_t D) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < V * D;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = k / D, d = k % D;
    float sum = 0.0f;
    for (int32_t p = starts[row]; p < starts[row + 1]; ++p)
      sum += loadElement(dy[sorted[p] * D + d]);
    g[k] = sum;
  }
}

HSPMD_KERNEL void adamwKernel(float *p, const float *g, float *m, float *v, int64_t n, double lr, double beta1,
                              double beta2, double eps, double decay, double correction1, double correction2) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    m[i] = static_cast<float>(beta1 * m[i] + (1 - beta1) * g[i]);
    v[i] = static_cast<float>(beta2 * v[i] + (1 - beta2) * static_cast<double>(g[i]) * g[i]);
    const double update = (m[i] / correction1) / (sqrt(v[i] / correction2) + eps);
    p[i] = static_cast<float>(p[i] * (1 - lr * decay) - lr * update);
  }
}

HSPMD_KERNEL void sgdKernel(float *p, const float *g, float *momentum, int64_t n, double lr, double mu, double decay,
                            bool first) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double step = g[i] + decay * p[i];
    if (momentum) {
      momentum[i] = static_cast<float>(first ? step : mu * momentum[i] + step);
      step = momentum[i];
    }
    p[i] = static_cast<float>(p[i] - lr * step);
  }
}

// Scratch memory for one kernel call, freed in stream order.
class Scratch {
public:
  Scratch(int64_t bytes, cudaStream_t stream) : stream_(stream) {
    check(cudaMallocAsync(&data_, static_cast<size_t>(bytes), stream), "cudaMallocAsync");
  }
  ~Scratch() { cudaFreeAsync(data_, stream_); }
  template <typename T> T *as() const { return static_cast<T *>(data_); }

private:
  void *data_ = nullptr;
  cudaStream_t stream_;
};

// The embedding's gradient (the five steps above embeddingCountKernel) of `count` ids into the
// table's V x D gradient `g`.
template <typename DY>
void embeddingGrad(const int32_t *ids, const DY *dy, float *g, int64_t count, int64_t V, int64_t D, int64_t offset,
                   cudaStream_t stream) {
  expect(count < (int64_t{1} << 31), "embedding_grad", "more than 2^31 ids in one call");
  // counts (reused as the cursors), starts, list, sorted
  Scratch scratch((2 * V + 1 + 2 * count) * static_cast<int64_t>(sizeof(int32_t)), stream);
  int32_t *counts = scratch.as<int32_t>(), *starts = counts + V, *list = starts + V + 1, *sorted = list + count;
  const size_t countBytes = static_cast<size_t>(V) * sizeof(int32_t);
  check(cudaMemsetAsync(counts, 0, countBytes, stream), "cudaMemsetAsync");
  const LaunchShape perId = elementwiseLaunch(count);
  if (perId.blocks)
    launchKernel(perId.blocks, perId.threads, 0, stream, embeddingCountKernel, ids, counts, count, V, offset);
  launchKernel(1, kStartsThreads, 0, stream, embeddingStartsKernel, static_cast<const int32_t *>(counts), starts, V);
  check(cudaMemsetAsync(counts, 0, countBytes, stream), "cudaMemsetAsync");
  if (perId.blocks) {
    launchKernel(perId.blocks, perId.threads, 0, stream, embeddingListKernel, ids, static_cast<const int32_t *>(starts),
                 counts, list, count, V, offset);
    launchKernel(perId.blocks, perId.threads, 0, stream, embeddingOrderKernel, ids,
                 static_cast<const int32_t *>(starts), static_cast<const int32_t *>(list), sorted, V, offset);
  }
  if (const LaunchShape perElement = elementwiseLaunch(V * D); perElement.blocks)
    launchKernel(perElement.blocks, perElement.threads, 0, stream, embeddingSumKernel<DY>,
                 static_cast<const int32_t *>(starts), static_cast<const int32_t *>(sorted), dy, g, V, D);
}

/// Whether a norm (or its gradient) takes these tensors as they are: activations (x, dy, y or
/// dx) f32 or bf16, parameters and their gradients f32. Otherwise runKernel widens them.
inline bool normTakes(const std::string &op, In in, In out) {
  const bool layer = op.rfind("layernorm", 0) == 0, grad = op.size() > 5 && op.substr(op.size() - 5) == "_grad";
  auto f32 = [](const TensorView &t) { return t.dtype == ir::DType::F32; };
  auto activation = [](const TensorView &t) { return t.dtype == ir::DType::F32 || t.dtype == ir::DType::BF16; };
  if (in.size() < 2 || out.empty() || !activation(in[0]) || !f32(in[1]) || !activation(out[0]))
    return false;
  if (!grad)
    return !layer || (in.size() > 2 && f32(in[2]));
  return in.size() > 2 && activation(in[2]) && out.size() >= (layer ? 3u : 2u) && f32(out[1]) &&
         (!layer || f32(out[2]));
}

/// Whether softmax, cross-entropy, its vocabulary-parallel steps or the embedding take these
/// tensors as they are, f32 or bf16 where an activation, its gradient or the logits stand (read
/// exactly, written rounded: the widened kernel's result, rounded), with their f32 parts f32: the
/// embedding's table and its gradient, the loss and its upstream gradient, the steps' maxima and
/// sums. The ids and targets are i32.
inline bool rowKernelTakes(const std::string &op, In in, In out) {
  // Per op: the inputs and outputs that may be bf16 ('b'), must be f32 ('f') or i32 ('i').
  static const std::map<std::string, std::pair<std::string, std::string>> kinds = {
      {"softmax", {"b", "b"}},
      {"cross_entropy", {"bi", "f"}},
      {"cross_entropy_grad", {"bif", "b"}},
      {"vocab_parallel_max", {"b", "f"}},
      {"vocab_parallel_sums", {"bif", "f"}},
      {"vocab_parallel_grad", {"biff", "b"}},
      {"embedding", {"fi", "b"}},
      {"embedding_grad", {"ib", "f"}},
  };
  const auto it = kinds.find(op);
  if (it == kinds.end())
    return false;
  auto fits = [](In tensors, const std::string &kind) {
    if (tensors.size() < kind.size())
      return false;
    for (size_t k = 0; k < kind.size(); ++k) {
      const ir::DType t = tensors[k].dtype;
      if (kind[k] == 'i'   ? t != ir::DType::I32
          : kind[k] == 'f' ? t != ir::DType::F32
                           : t != ir::DType::F32 && t != ir::DType::BF16)
        return false;
    }
    for (size_t k = kind.size(); k < tensors.size(); ++k) // vocab_parallel_grad's upstream, ...
      if (tensors[k].dtype != ir::DType::F32)
        return false;
    return true;
  };
  return fits(in, it->second.first) && fits(out, it->second.second);
}

void norm(const std::string &op, const ir::AttrMap &attrs, In in, In out, cudaStream_t stream) {
  const bool layer = op.rfind("layernorm", 0) == 0, grad = op.size() > 5 && op.substr(op.size() - 5) == "_grad";
  const int64_t n = in[0].shape.empty() ? 1 : in[0].shape.back(), rows = in[0].numel() / std::max<int64_t>(n, 1);
  const double eps = ir::floatAttr(attrs, "eps", 1e-5);
  const LaunchShape shape = rowLaunch(rows, n);
  if (!shape.blocks)
    return;
  const char *name = op.c_str();
  if (!grad) {
    byElementType(in[0], name, [&](auto *tx) {
      byElementType(out[0], name, [&](auto *ty) {
        using X = Element<decltype(tx)>;
        using Y = Element<decltype(ty)>;
        launchKernel(shape.blocks, shape.threads, 0, stream, normRowsKernel<X, float, Y>,
                     static_cast<const X *>(in[0].data), in[1].f32(), layer ? in[2].f32() : nullptr,
                     static_cast<const float *>(nullptr), static_cast<Y *>(out[0].data), nullptr, rows, n, eps, layer);
      });
    });
    return;
  }
  Scratch stats(rows * 2 * static_cast<int64_t>(sizeof(double)), stream);
  const LaunchShape columns = elementwiseLaunch(n);
  byElementType(in[0], name, [&](auto *tx) {
    byElementType(in[2], name, [&](auto *tdy) {
      using X = Element<decltype(tx)>;
      using DY = Element<decltype(tdy)>;
      byElementType(out[0], name, [&](auto *tdx) {
        using DX = Element<decltype(tdx)>;
        launchKernel(shape.blocks, shape.threads, 0, stream, normRowsKernel<X, DY, DX>,
                     static_cast<const X *>(in[0].data), in[1].f32(), nullptr, static_cast<const DY *>(in[2].data),
                     static_cast<DX *>(out[0].data), stats.as<double>(), rows, n, eps, layer);
      });
      launchKernel(columns.blocks, columns.threads, 0, stream, normParamGradKernel<X, DY>,
                   static_cast<const X *>(in[0].data), static_cast<const DY *>(in[2].data), stats.as<double>(),
                   out[1].f32(), layer ? out[2].f32() : nullptr, rows, n);
    });
  });
}

void crossEntropy(const std::string &op, const ir::AttrMap &attrs, In in, In out, const KernelContext &context,
                  cudaStream_t stream) {
  const TensorView &logits = in[0], &targets = in[1];
  const int64_t V = logits.shape.back(), rows = logits.numel() / std::max<int64_t>(V, 1);
  const double tokens = static_cast<double>(context.scored > 0 ? context.scored : ir::intAttr(attrs, "tokens", rows));
  const bool grad = op == "cross_entropy_grad";
  // A target outside the vocabulary goes to the stream's fault word, which its next
  // synchronize reads (no wait here); without one, to a word of scratch this call waits for.
  Scratch scratch((grad ? 0 : rows * static_cast<int64_t>(sizeof(double))) + static_cast<int64_t>(sizeof(int64_t)),
                  stream);
  int64_t *bad = context.fault ? context.fault : scratch.as<int64_t>();
  if (!context.fault)
    check(cudaMemsetAsync(bad, 0, sizeof(int64_t), stream), "cudaMemsetAsync");
  double *rowLoss = grad ? nullptr : scratch.as<double>() + 1;
  const LaunchShape shape = rowLaunch(rows, V);
  if (shape.blocks)
    byElementType(logits, op.c_str(), [&](auto *tx) {
      using X = Element<decltype(tx)>;
      if (!grad)
        launchKernel(shape.blocks, shape.threads, 0, stream, crossEntropyKernel<X, float>,
                     static_cast<const X *>(logits.data), targets.i32(), rowLoss, static_cast<float *>(nullptr),
                     static_cast<const float *>(nullptr), rows, V, tokens, bad);
      else
        byElementType(out[0], op.c_str(), [&](auto *tg) {
          using G = Element<decltype(tg)>;
          launchKernel(shape.blocks, shape.threads, 0, stream, crossEntropyKernel<X, G>,
                       static_cast<const X *>(logits.data), targets.i32(), rowLoss, static_cast<G *>(out[0].data),
                       static_cast<const float *>(in[2].f32()), rows, V, tokens, bad);
        });
    });
  if (!grad)
    launchKernel(1, 1, 0, stream, lossSumKernel, rowLoss, rows, tokens, out[0].f32());
  if (context.fault)
    return;
  int64_t fault = 0; // the CPU kernel's check, at the cost of one wait per loss
  check(cudaMemcpyAsync(&fault, bad, sizeof fault, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), op.c_str());
  throwFault(fault);
}

inline const std::map<std::string, Runner> &kernelTable() {
  static const std::map<std::string, Runner> table = [] {
    std::map<std::string, Runner> t;
    auto bin = [&](const char *name, auto f) {
      t[name] = [name, f](const ir::AttrMap &, In in, In out, const KernelContext &, cudaStream_t s) {
        binary(name, in, out, f, s);
      };
    };
    auto un = [&](const char *name, auto f) {
      t[name] = [name, f](const ir::AttrMap &, In in, In out, const KernelContext &, cudaStream_t s) {
        unary(name, in, out, f, s);
      };
    };
    bin("add", Add{});
    bin("sub", Sub{});
    bin("mul", Mul{});
    bin("div", Div{});
    bin("gelu_grad", GeluGrad{});
    bin("silu_grad", SiluGrad{});
    bin("relu_grad", ReluGrad{});
    un("neg", Neg{});
    un("gelu", Gelu{});
    un("silu", Silu{});
    un("relu", Relu{});
    t["broadcast"] = [](const ir::AttrMap &, In in, In out, const KernelContext &, cudaStream_t s) {
      binary("broadcast", in.subspan(0, 1), out, First{}, s);
    };
    t["constant"] = [](const ir::AttrMap &attrs, In, In out, const KernelContext &, cudaStream_t s) {
      const LaunchShape shape = elementwiseLaunch(out[0].numel());
      if (shape.blocks)
        byElementType(out[0], "constant", [&](auto *ty) {
          launchKernel(shape.blocks, shape.threads, 0, s, fillKernel<Element<decltype(ty)>>,
                       static_cast<Element<decltype(ty)> *>(out[0].data), out[0].numel(),
                       static_cast<float>(ir::floatAttr(attrs, "value")));
        });
    };
    for (const char *name : {"layernorm", "layernorm_grad", "rmsnorm", "rmsnorm_grad"})
      t[name] = [op = std::string(name)](const ir::AttrMap &attrs, In in, In out, const KernelContext &,
                                         cudaStream_t s) { norm(op, attrs, in, out, s); };
    t["softmax"] = [](const ir::AttrMap &attrs, In in, In out, const KernelContext &, cudaStream_t s) {
      const auto dim = static_cast<size_t>(ir::intAttr(attrs, "dim"));
      expect(dim < in[0].shape.size(), "softmax", "dimension out of range");
      int64_t inner = 1, outer = 1;
      for (size_t d = dim + 1; d < in[0].shape.size(); ++d)
        inner *= in[0].shape[d];
      for (size_t d = 0; d < dim; ++d)
        outer *= in[0].shape[d];
      const LaunchShape shape = elementwiseLaunch(outer * inner);
      if (shape.blocks)
        byElementType(in[0], "softmax", [&](auto *tx) {
          byElementType(out[0], "softmax", [&](auto *ty) {
            using X = Element<decltype(tx)>;
            using Y = Element<decltype(ty)>;
            launchKernel(shape.blocks, shape.threads, 0, s, softmaxKernel<X, Y>, static_cast<const X *>(in[0].data),
                         static_cast<Y *>(out[0].data), outer, in[0].shape[dim], inner);
          });
        });
    };
    for (const char *name : {"cross_entropy", "cross_entropy_grad"})
      t[name] = [op = std::string(name)](const ir::AttrMap &attrs, In in, In out, const KernelContext &context,
                                         cudaStream_t s) { crossEntropy(op, attrs, in, out, context, s); };
    // The vocabulary-parallel cross-entropy's steps: in[0] the logits but for the loss's.
    auto tokensOf = [](const ir::AttrMap &attrs, const KernelContext &context, int64_t rows) {
      return static_cast<double>(context.scored > 0 ? context.scored : ir::intAttr(attrs, "tokens", rows));
    };
    t["vocab_parallel_max"] = [](const ir::AttrMap &, In in, In out, const KernelContext &, cudaStream_t s) {
      const int64_t V = std::max<int64_t>(in[0].shape.back(), 1), rows = in[0].numel() / V;
      const LaunchShape shape = elementwiseLaunch(rows);
      if (shape.blocks)
        byElementType(in[0], "vocab_parallel_max", [&](auto *tx) {
          using X = Element<decltype(tx)>;
          launchKernel(shape.blocks, shape.threads, 0, s, vocabMaxKernel<X>, static_cast<const X *>(in[0].data),
                       out[0].f32(), rows, V);
        });
    };
    t["vocab_parallel_sums"] = [](const ir::AttrMap &attrs, In in, In out, const KernelContext &, cudaStream_t s) {
      const int64_t V = std::max<int64_t>(in[0].shape.back(), 1), rows = in[0].numel() / V;
      const LaunchShape shape = elementwiseLaunch(rows);
      if (shape.blocks)
        byElementType(in[0], "vocab_parallel_sums", [&](auto *tx) {
          using X = Element<decltype(tx)>;
          launchKernel(shape.blocks, shape.threads, 0, s, vocabSumsKernel<X>, static_cast<const X *>(in[0].data),
                       in[1].i32(), static_cast<const float *>(in[2].f32()), out[0].f32(), rows, V,
                       ir::intAttr(attrs, "vocab_offset"));
        });
    };
    t["vocab_parallel_loss"] = [tokensOf](const ir::AttrMap &attrs, In in, In out, const KernelContext &context,
                                          cudaStream_t s) {
      const int64_t rows = in[1].numel();
      launchKernel(1, 1, 0, s, vocabLossKernel, in[0].i32(), in[1].f32(), in[2].f32(), rows,
                   tokensOf(attrs, context, rows), out[0].f32());
    };
    t["vocab_parallel_grad"] = [tokensOf](const ir::AttrMap &attrs, In in, In out, const KernelContext &context,
                                          cudaStream_t s) {
      const int64_t V = std::max<int64_t>(in[0].shape.back(), 1), rows = in[0].numel() / V;
      const LaunchShape shape = elementwiseLaunch(rows * V);
      if (shape.blocks)
        byElementType(in[0], "vocab_parallel_grad", [&](auto *tx) {
          byElementType(out[0], "vocab_parallel_grad", [&](auto *tg) {
            using X = Element<decltype(tx)>;
            using G = Element<decltype(tg)>;
            launchKernel(shape.blocks, shape.threads, 0, s, vocabGradKernel<X, G>, static_cast<const X *>(in[0].data),
                         in[1].i32(), static_cast<const float *>(in[2].f32()), static_cast<const float *>(in[3].f32()),
                         static_cast<const float *>(in[4].f32()), static_cast<G *>(out[0].data), rows, V,
                         ir::intAttr(attrs, "vocab_offset"), tokensOf(attrs, context, rows));
          });
        });
    };
    t["embedding"] = [](const ir::AttrMap &attrs, In in, In out, const KernelContext &, cudaStream_t s) {
      const int64_t V = in[0].shape[0], D = in[0].shape[1], count = in[1].numel();
      const LaunchShape shape = elementwiseLaunch(count * D);
      if (shape.blocks)
        byElementType(out[0], "embedding", [&](auto *ty) {
          using Y = Element<decltype(ty)>;
          launchKernel(shape.blocks, shape.threads, 0, s, embeddingKernel<Y>, static_cast<const float *>(in[0].f32()),
                       in[1].i32(), static_cast<Y *>(out[0].data), count, V, D, ir::intAttr(attrs, "vocab_offset"));
        });
    };
    t["embedding_grad"] = [](const ir::AttrMap &attrs, In in, In out, const KernelContext &, cudaStream_t s) {
      const int64_t V = out[0].shape[0], D = out[0].shape[1], count = in[0].numel();
      byElementType(in[1], "embedding_grad", [&](auto *tdy) {
        using DY = Element<decltype(tdy)>;
        embeddingGrad(in[0].i32(), static_cast<const DY *>(in[1].data), out[0].f32(), count, V, D,
                      ir::intAttr(attrs, "vocab_offset"), s);
      });
    };
    for (const char *name : {"reshape", "transpose", "unbind", "split", "concat", "slice", "pad", "sum", "mean"})
      t[name] = [name](const ir::AttrMap &attrs, In in, In out, const KernelContext &, cudaStream_t s) {
        layoutKernel(name, attrs, in, out, s);
      };
    for (const char *name : {"attention", "attention_grad"})
      t[name] = [name](const ir::AttrMap &attrs, In in, In out, const KernelContext &context, cudaStream_t s) {
        attentionKernel(name, attrs, in, out, context, s);
      };
    t["adamw"] = [](const ir::AttrMap &attrs, In in, In out, const KernelContext &context, cudaStream_t s) {
      expect(in.size() == 4 && out.size() == 1, "adamw", "expects param, grad, m, v -> param");
      const double beta1 = ir::floatAttr(attrs, "beta1", 0.9), beta2 = ir::floatAttr(attrs, "beta2", 0.999);
      const LaunchShape shape = elementwiseLaunch(out[0].numel());
      if (shape.blocks)
        launchKernel(shape.blocks, shape.threads, 0, s, adamwKernel, out[0].f32(), in[1].f32(), in[2].f32(),
                     in[3].f32(), out[0].numel(), ir::floatAttr(attrs, "lr", 1e-3), beta1, beta2,
                     ir::floatAttr(attrs, "eps", 1e-8), ir::floatAttr(attrs, "weight_decay", 0.01),
                     1 - std::pow(beta1, static_cast<double>(context.step)),
                     1 - std::pow(beta2, static_cast<double>(context.step)));
    };
    t["sgd"] = [](const ir::AttrMap &attrs, In in, In out, const KernelContext &context, cudaStream_t s) {
      const LaunchShape shape = elementwiseLaunch(out[0].numel());
      if (shape.blocks)
        launchKernel(shape.blocks, shape.threads, 0, s, sgdKernel, out[0].f32(), in[1].f32(),
                     in.size() > 2 ? in[2].f32() : nullptr, out[0].numel(), ir::floatAttr(attrs, "lr", 1e-2),
                     ir::floatAttr(attrs, "momentum", 0.0), ir::floatAttr(attrs, "weight_decay", 0.0),
                     context.step == 1);
    };
    return t;
  }();
  return table;
}

} // namespace
} // namespace hspmd::runtime::gpu
