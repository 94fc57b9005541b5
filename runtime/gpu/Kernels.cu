// Kernels.cu - the CUDA kernels (GpuKernels.h). Each follows its CPU kernel in
// runtime/kernels/ (same formulas, sums in double where the CPU's are), so that fp32 results
// agree to rounding: elementwise ops with numpy broadcasting as grid-stride loops, norms and
// cross-entropy one block per row, parameter gradients of the norms one thread per column
// adding rows in order, matrix products through cuBLAS (no TF32: fp32 products; bf16 ones on
// tensor cores under --precision bf16).
#include "runtime/gpu/ElementwiseKernels.cuh"
#include "runtime/gpu/KernelFamilies.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <type_traits>

namespace hspmd::runtime::gpu {

void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw KernelError(std::string(what) + ": " + cudaGetErrorString(status));
}

namespace {

using kernels::expect;

// cuBLAS, loaded when a stream first needs it (cublas()): linked, its libcublasLt's static
// initializers cost every process 60 ms as it starts, every hspmc command included.
#define HSPMD_SYMBOL_NAME(f) HSPMD_SYMBOL_NAME2(f) // cublas_v2.h's macros (cublasSgemm_v2) expanded
#define HSPMD_SYMBOL_NAME2(f) #f
struct Blas {
  decltype(&cublasCreate) create = nullptr;
  decltype(&cublasDestroy) destroy = nullptr;
  decltype(&cublasSetStream) setStream = nullptr;
  decltype(&cublasSetMathMode) setMathMode = nullptr;
  decltype(&cublasSgemm) sgemm = nullptr;
  // cublasGemmEx's C entry point (C++ also sees an inline overload taking a cudaDataType)
  cublasStatus_t (*gemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                           const void *, cudaDataType, int, const void *, cudaDataType, int, const void *, void *,
                           cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusString) statusString = nullptr;
};

const Blas &cublas() {
  static const Blas loaded = [] {
    // The toolkit's cuBLAS this was compiled against: by its soname (the executable's run path
    // names the toolkit's library folder), else in that folder.
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void *library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
#ifdef HSPMD_CUBLAS_DIR
    if (!library)
      library = dlopen((std::string(HSPMD_CUBLAS_DIR) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
    if (!library)
      throw KernelError("cannot load cuBLAS (" + name + "): " + dlerror());
    auto symbol = [&](const char *symbolName) {
      void *found = dlsym(library, symbolName);
      if (!found)
        throw KernelError(name + " has no " + symbolName);
      return found;
    };
    Blas b;
    b.create = reinterpret_cast<decltype(b.create)>(symbol(HSPMD_SYMBOL_NAME(cublasCreate)));
    b.destroy = reinterpret_cast<decltype(b.destroy)>(symbol(HSPMD_SYMBOL_NAME(cublasDestroy)));
    b.setStream = reinterpret_cast<decltype(b.setStream)>(symbol(HSPMD_SYMBOL_NAME(cublasSetStream)));
    b.setMathMode = reinterpret_cast<decltype(b.setMathMode)>(symbol(HSPMD_SYMBOL_NAME(cublasSetMathMode)));
    b.sgemm = reinterpret_cast<decltype(b.sgemm)>(symbol(HSPMD_SYMBOL_NAME(cublasSgemm)));
    b.gemmEx = reinterpret_cast<decltype(b.gemmEx)>(symbol(HSPMD_SYMBOL_NAME(cublasGemmEx)));
    b.statusString = reinterpret_cast<decltype(b.statusString)>(symbol(HSPMD_SYMBOL_NAME(cublasGetStatusString)));
    return b; // the library stays loaded for the process
  }();
  return loaded;
}

void checkBlas(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw KernelError(std::string(what) + ": " + cublas().statusString(status));
}

cudaStream_t streamOf(const GpuStream &s) {
  return static_cast<cudaStream_t>(s.stream());
}

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
        binaryKernel<<<shape.blocks, shape.threads, 0, stream>>>(
            static_cast<const A *>(a.data), static_cast<const B *>(b.data), static_cast<Y *>(y.data), n, s, f);
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
      unaryKernel<<<shape.blocks, shape.threads, 0, stream>>>(static_cast<const X *>(in[0].data),
                                                              static_cast<Y *>(out[0].data), n, f);
    });
  });
}

// ---- rows: norms, softmax, cross-entropy ------------------------------------------------

// The sum of `value` over the block's threads (every thread gets it); `shared` holds 32 doubles.
__device__ double blockSum(double value, double *shared) {
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

__device__ float blockMax(float value, float *shared) {
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
// parameter gradients.
__global__ void normRowsKernel(const float *x, const float *w, const float *b, const float *dy, float *y, double *stats,
                               int64_t rows, int64_t n, double eps, bool layer) {
  __shared__ double shared[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float *xr = x + row * n;
    double mean = 0;
    if (layer) {
      double s = 0;
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        s += xr[j];
      mean = blockSum(s, shared) / static_cast<double>(n);
    }
    double s2 = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      s2 += (xr[j] - mean) * (xr[j] - mean);
    const double r = 1 / sqrt(blockSum(s2, shared) / static_cast<double>(n) + eps);
    if (stats && threadIdx.x == 0) {
      stats[2 * row] = mean;
      stats[2 * row + 1] = r;
    }
    if (!dy) {
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        y[row * n + j] = static_cast<float>((xr[j] - mean) * r * w[j] + (layer ? b[j] : 0.0f));
      continue;
    }
    const float *dyr = dy + row * n;
    double sumG = 0, sumGX = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const double xhat = (xr[j] - mean) * r, g = static_cast<double>(dyr[j]) * w[j];
      sumG += g;
      sumGX += g * xhat;
    }
    sumGX = blockSum(sumGX, shared);
    sumG = layer ? blockSum(sumG, shared) : 0.0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const double xhat = (xr[j] - mean) * r, g = static_cast<double>(dyr[j]) * w[j];
      y[row * n + j] =
          static_cast<float>(r * (g - sumG / static_cast<double>(n) - xhat * sumGX / static_cast<double>(n)));
    }
  }
}

// dw (and db) of a norm: one thread per column, adding the rows in order.
__global__ void normParamGradKernel(const float *x, const float *dy, const double *stats, float *dw, float *db,
                                    int64_t rows, int64_t n) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double w = 0, b = 0;
    for (int64_t row = 0; row < rows; ++row) {
      const double xhat = (x[row * n + j] - stats[2 * row]) * stats[2 * row + 1];
      w += dy[row * n + j] * xhat;
      b += dy[row * n + j];
    }
    dw[j] = static_cast<float>(w);
    if (db)
      db[j] = static_cast<float>(b);
  }
}

// Softmax along a dimension of extent n between `outer` and `inner` elements: one thread per
// (outer, inner) pair.
__global__ void softmaxKernel(const float *x, float *y, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t p = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; p < outer * inner;
       p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = p / inner, i = p % inner;
    const float *xr = x + o * n * inner + i;
    float *yr = y + o * n * inner + i;
    float peak = -INFINITY;
    for (int64_t j = 0; j < n; ++j)
      peak = fmaxf(peak, xr[j * inner]);
    double total = 0;
    for (int64_t j = 0; j < n; ++j)
      total += exp(static_cast<double>(xr[j * inner] - peak));
    for (int64_t j = 0; j < n; ++j)
      yr[j * inner] = static_cast<float>(exp(static_cast<double>(xr[j * inner] - peak)) / total);
  }
}

// Cross-entropy, one block per row: the row's loss into `rowLoss` (forward) or its gradient
// into `grad`. A target < 0 is not scored; one outside the vocabulary sets `*bad` to it + 1.
__global__ void crossEntropyKernel(const float *logits, const int32_t *targets, double *rowLoss, float *grad,
                                   const float *upstream, int64_t rows, int64_t V, double tokens, int64_t *bad) {
  __shared__ double shared[32];
  __shared__ float peaks[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float *xr = logits + row * V;
    const int64_t target = targets[row];
    if (target >= V) {
      if (threadIdx.x == 0)
        *bad = target + 1;
      continue;
    }
    if (target < 0) {
      if (grad)
        for (int64_t c = threadIdx.x; c < V; c += blockDim.x)
          grad[row * V + c] = 0.0f;
      else if (threadIdx.x == 0)
        rowLoss[row] = 0;
      continue;
    }
    float peak = -INFINITY;
    for (int64_t c = threadIdx.x; c < V; c += blockDim.x)
      peak = fmaxf(peak, xr[c]);
    peak = blockMax(peak, peaks);
    double total = 0;
    for (int64_t c = threadIdx.x; c < V; c += blockDim.x)
      total += expf(xr[c] - peak);
    total = blockSum(total, shared);
    if (!grad) {
      if (threadIdx.x == 0)
        rowLoss[row] = log(total) + peak - xr[target];
      continue;
    }
    const double up = *upstream;
    const auto factor = static_cast<float>(up / total / tokens);
    for (int64_t c = threadIdx.x; c < V; c += blockDim.x)
      grad[row * V + c] = expf(xr[c] - peak) * factor - (c == target ? static_cast<float>(up / tokens) : 0.0f);
  }
}

// The rows' losses added in row order (one thread: the same sum as the CPU's), over `tokens`.
__global__ void lossSumKernel(const double *rowLoss, int64_t rows, double tokens, float *loss) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r)
    total += rowLoss[r];
  *loss = static_cast<float>(total / tokens);
}

// The steps of the vocabulary-parallel cross-entropy (runtime/kernels/EmbeddingAndLoss.cpp:
// the same formulas), one thread per row (per element for the gradient).
__global__ void vocabMaxKernel(const float *x, float *peak, int64_t rows, int64_t V) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float m = -INFINITY;
    for (int64_t c = 0; c < V; ++c)
      m = fmaxf(m, x[r * V + c]);
    peak[r] = m;
  }
}

__global__ void vocabSumsKernel(const float *x, const int32_t *targets, const float *peak, float *sums, int64_t rows,
                                int64_t V, int64_t offset) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double total = 0;
    for (int64_t c = 0; c < V; ++c)
      total += exp(static_cast<double>(x[r * V + c] - peak[r]));
    sums[r] = static_cast<float>(total);
    const int64_t t = targets[r] - offset;
    sums[rows + r] = t >= 0 && t < V ? x[r * V + t] : 0.0f;
  }
}

// One thread: the rows' losses added in row order, as the CPU's.
__global__ void vocabLossKernel(const int32_t *targets, const float *peak, const float *sums, int64_t rows,
                                double tokens, float *loss) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r)
    if (targets[r] >= 0)
      total += log(static_cast<double>(sums[r])) + peak[r] - sums[rows + r];
  *loss = static_cast<float>(total / tokens);
}

__global__ void vocabGradKernel(const float *x, const int32_t *targets, const float *peak, const float *sums,
                                const float *upstream, float *g, int64_t rows, int64_t V, int64_t offset,
                                double tokens) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < rows * V;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = k / V, c = k % V;
    if (targets[r] < 0) {
      g[k] = 0.0f;
      continue;
    }
    const double p = exp(static_cast<double>(x[k] - peak[r])) / sums[r];
    g[k] = static_cast<float>(upstream[0] * (p - (c + offset == targets[r] ? 1.0 : 0.0)) / tokens);
  }
}

// ---- embedding, optimizer -------------------------------------------------------------

__global__ void embeddingKernel(const float *table, const int32_t *ids, float *y, int64_t count, int64_t V, int64_t D,
                                int64_t offset) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < count * D;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = k / D, d = k % D, row = ids[i] - offset;
    y[k] = row >= 0 && row < V ? table[row * D + d] : 0.0f;
  }
}

// One thread per column of the table, adding the matching ids' rows in order (deterministic).
__global__ void embeddingGradKernel(const int32_t *ids, const float *dy, float *g, int64_t count, int64_t V, int64_t D,
                                    int64_t offset) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < V * D;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = k / D, d = k % D;
    float sum = 0.0f;
    for (int64_t i = 0; i < count; ++i)
      if (ids[i] - offset == row)
        sum += dy[i * D + d];
    g[k] = sum;
  }
}

__global__ void adamwKernel(float *p, const float *g, float *m, float *v, int64_t n, double lr, double beta1,
                            double beta2, double eps, double decay, double correction1, double correction2) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    m[i] = static_cast<float>(beta1 * m[i] + (1 - beta1) * g[i]);
    v[i] = static_cast<float>(beta2 * v[i] + (1 - beta2) * static_cast<double>(g[i]) * g[i]);
    const double update = (m[i] / correction1) / (sqrt(v[i] / correction2) + eps);
    p[i] = static_cast<float>(p[i] * (1 - lr * decay) - lr * update);
  }
}

__global__ void sgdKernel(float *p, const float *g, float *momentum, int64_t n, double lr, double mu, double decay,
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

// ---- dispatch --------------------------------------------------------------------------

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

// bf16 storage (runKernel): widened to f32 for a kernel, its results rounded back.
__global__ void widenKernel(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = __bfloat162float(__ushort_as_bfloat16(in[i]));
}

__global__ void narrowKernel(const float *in, uint16_t *out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = __bfloat16_as_ushort(__float2bfloat16(in[i]));
}

void norm(const std::string &op, const ir::AttrMap &attrs, In in, In out, cudaStream_t stream) {
  const bool layer = op.rfind("layernorm", 0) == 0, grad = op.size() > 5 && op.substr(op.size() - 5) == "_grad";
  const int64_t n = in[0].shape.empty() ? 1 : in[0].shape.back(), rows = in[0].numel() / std::max<int64_t>(n, 1);
  const double eps = ir::floatAttr(attrs, "eps", 1e-5);
  const LaunchShape shape = rowLaunch(rows, n);
  if (!shape.blocks)
    return;
  if (!grad) {
    normRowsKernel<<<shape.blocks, shape.threads, 0, stream>>>(in[0].f32(), in[1].f32(), layer ? in[2].f32() : nullptr,
                                                               nullptr, out[0].f32(), nullptr, rows, n, eps, layer);
    return;
  }
  Scratch stats(rows * 2 * static_cast<int64_t>(sizeof(double)), stream);
  normRowsKernel<<<shape.blocks, shape.threads, 0, stream>>>(in[0].f32(), in[1].f32(), nullptr, in[2].f32(),
                                                             out[0].f32(), stats.as<double>(), rows, n, eps, layer);
  const LaunchShape columns = elementwiseLaunch(n);
  normParamGradKernel<<<columns.blocks, columns.threads, 0, stream>>>(
      in[0].f32(), in[2].f32(), stats.as<double>(), out[1].f32(), layer ? out[2].f32() : nullptr, rows, n);
}

void crossEntropy(const std::string &op, const ir::AttrMap &attrs, In in, In out, const KernelContext &context,
                  cudaStream_t stream) {
  const TensorView &logits = in[0], &targets = in[1];
  const int64_t V = logits.shape.back(), rows = logits.numel() / std::max<int64_t>(V, 1);
  const double tokens = static_cast<double>(context.scored > 0 ? context.scored : ir::intAttr(attrs, "tokens", rows));
  const bool grad = op == "cross_entropy_grad";
  Scratch scratch((grad ? 0 : rows * static_cast<int64_t>(sizeof(double))) + static_cast<int64_t>(sizeof(int64_t)),
                  stream);
  int64_t *bad = scratch.as<int64_t>();
  check(cudaMemsetAsync(bad, 0, sizeof(int64_t), stream), "cudaMemsetAsync");
  double *rowLoss = grad ? nullptr : reinterpret_cast<double *>(bad + 1);
  const LaunchShape shape = rowLaunch(rows, V);
  if (shape.blocks)
    crossEntropyKernel<<<shape.blocks, shape.threads, 0, stream>>>(logits.f32(), targets.i32(), rowLoss,
                                                                   grad ? out[0].f32() : nullptr,
                                                                   grad ? in[2].f32() : nullptr, rows, V, tokens, bad);
  if (!grad)
    lossSumKernel<<<1, 1, 0, stream>>>(rowLoss, rows, tokens, out[0].f32());
  int64_t target = 0; // the CPU kernel's check, at the cost of one wait per loss
  check(cudaMemcpyAsync(&target, bad, sizeof target, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), op.c_str());
  expect(target == 0, op, "target " + std::to_string(target - 1) + " outside the vocabulary");
}

// One product y = a b of row-major matrices (a: rows x K, b: K x N) through cuBLAS's
// column-major one, y^T = b^T a^T. fp32: cublasSgemm (the handle's pedantic math: no TF32).
// bf16 operands (--precision bf16): cublasGemmEx on tensor cores, f32 accumulation, y in its
// own type (bf16 activations, f32 weight gradients).
struct Gemm {
  cublasHandle_t handle;
  bool bf16;
  cudaDataType yType;
  void operator()(int64_t rows, int64_t K, int64_t N, const void *a, const void *b, void *y) const {
    const float one = 1.0f, zero = 0.0f;
    if (!bf16) {
      checkBlas(cublas().sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(rows),
                               static_cast<int>(K), &one, static_cast<const float *>(b), static_cast<int>(N),
                               static_cast<const float *>(a), static_cast<int>(K), &zero, static_cast<float *>(y),
                               static_cast<int>(N)),
                "cublasSgemm");
      return;
    }
    checkBlas(cublas().gemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(rows),
                              static_cast<int>(K), &one, b, CUDA_R_16BF, static_cast<int>(N), a, CUDA_R_16BF,
                              static_cast<int>(K), &zero, y, yType, static_cast<int>(N), CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx");
  }
};

// The handle's math mode for one bf16 product: cuBLAS's default (tensor cores), the pedantic
// one restored after it for the fp32 products.
class TensorCoreMath {
public:
  explicit TensorCoreMath(cublasHandle_t handle) : handle_(handle) {
    checkBlas(cublas().setMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  }
  ~TensorCoreMath() { cublas().setMathMode(handle_, CUBLAS_PEDANTIC_MATH); }
  TensorCoreMath(const TensorCoreMath &) = delete;
  TensorCoreMath &operator=(const TensorCoreMath &) = delete;

private:
  cublasHandle_t handle_;
};

// y = a b with numpy's batch broadcasting. In fp32 when every tensor is f32; otherwise (bf16
// storage) a bf16 product, an f32 operand (a parameter) rounded to bf16 in scratch first.
void matmul(In in, In out, const GpuStream &s) {
  const TensorView &a = in[0], &b = in[1], &y = out[0];
  expect(a.shape.size() >= 2 && b.shape.size() >= 2, "matmul", "operands need at least 2 dimensions");
  const int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
  expect(b.shape[b.shape.size() - 2] == K && y.shape.back() == N, "matmul", "shapes do not fit");
  const bool bf16 = a.dtype == ir::DType::BF16 || b.dtype == ir::DType::BF16 || y.dtype == ir::DType::BF16;
  const int64_t yBytes = y.dtype == ir::DType::BF16 ? 2 : 4, operandBytes = bf16 ? 2 : 4;
  cudaStream_t stream = streamOf(s);
  if (M * N == 0)
    return;
  if (K == 0) {
    check(cudaMemsetAsync(y.data, 0, static_cast<size_t>(y.numel() * yBytes), stream), "cudaMemsetAsync");
    return;
  }
  std::vector<std::unique_ptr<Scratch>> narrowed; // freed in stream order, after the products
  auto operand = [&](const TensorView &t) -> const char * {
    if (!bf16 || t.dtype == ir::DType::BF16)
      return static_cast<const char *>(t.data);
    const int64_t n = t.numel();
    narrowed.push_back(std::make_unique<Scratch>(std::max<int64_t>(n, 1) * 2, stream));
    if (const LaunchShape shape = elementwiseLaunch(n); shape.blocks)
      narrowKernel<<<shape.blocks, shape.threads, 0, stream>>>(t.f32(), narrowed.back()->as<uint16_t>(), n);
    return narrowed.back()->as<const char>();
  };
  const char *A = operand(a), *B = operand(b);
  char *Y = static_cast<char *>(y.data);
  auto handle = static_cast<cublasHandle_t>(s.blas());
  std::optional<TensorCoreMath> math;
  if (bf16)
    math.emplace(handle);
  const Gemm gemm{handle, bf16, y.dtype == ir::DType::BF16 ? CUDA_R_16BF : CUDA_R_32F};
  if (b.shape.size() == 2) { // every row of a against one matrix
    gemm(a.numel() / K, K, N, A, B, Y);
    return;
  }
  // Batched: one product per batch index of the result, operands found by broadcasting.
  const std::vector<int64_t> batch(y.shape.begin(), y.shape.end() - 2);
  const std::vector<int64_t> aBatch(a.shape.begin(), a.shape.end() - 2), bBatch(b.shape.begin(), b.shape.end() - 2);
  const BroadcastStrides strides = broadcastStrides(aBatch, bBatch, batch);
  int64_t count = 1;
  for (int64_t d : batch)
    count *= d;
  for (int64_t i = 0; i < count; ++i) {
    int64_t ia = 0, ib = 0, rest = i;
    for (int d = strides.rank - 1; d >= 0; --d) {
      const int64_t at = rest % strides.out[d];
      rest /= strides.out[d];
      ia += at * strides.a[d];
      ib += at * strides.b[d];
    }
    gemm(M, K, N, A + ia * M * K * operandBytes, B + ib * K * N * operandBytes, Y + i * M * N * yBytes);
  }
}

using Runner = std::function<void(const ir::AttrMap &, In, In, const KernelContext &, GpuStream &)>;

const std::map<std::string, Runner> &runners() {
  static const std::map<std::string, Runner> table = [] {
    std::map<std::string, Runner> t;
    auto bin = [&](const char *name, auto f) {
      t[name] = [name, f](const ir::AttrMap &, In in, In out, const KernelContext &, GpuStream &s) {
        binary(name, in, out, f, streamOf(s));
      };
    };
    auto un = [&](const char *name, auto f) {
      t[name] = [name, f](const ir::AttrMap &, In in, In out, const KernelContext &, GpuStream &s) {
        unary(name, in, out, f, streamOf(s));
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
    t["broadcast"] = [](const ir::AttrMap &, In in, In out, const KernelContext &, GpuStream &s) {
      binary("broadcast", in.subspan(0, 1), out, First{}, streamOf(s));
    };
    t["constant"] = [](const ir::AttrMap &attrs, In, In out, const KernelContext &, GpuStream &s) {
      const LaunchShape shape = elementwiseLaunch(out[0].numel());
      if (shape.blocks)
        byElementType(out[0], "constant", [&](auto *ty) {
          fillKernel<<<shape.blocks, shape.threads, 0, streamOf(s)>>>(
              static_cast<Element<decltype(ty)> *>(out[0].data), out[0].numel(),
              static_cast<float>(ir::floatAttr(attrs, "value")));
        });
    };
    for (const char *name : {"layernorm", "layernorm_grad", "rmsnorm", "rmsnorm_grad"})
      t[name] = [op = std::string(name)](const ir::AttrMap &attrs, In in, In out, const KernelContext &, GpuStream &s) {
        norm(op, attrs, in, out, streamOf(s));
      };
    t["softmax"] = [](const ir::AttrMap &attrs, In in, In out, const KernelContext &, GpuStream &s) {
      const auto dim = static_cast<size_t>(ir::intAttr(attrs, "dim"));
      expect(dim < in[0].shape.size(), "softmax", "dimension out of range");
      int64_t inner = 1, outer = 1;
      for (size_t d = dim + 1; d < in[0].shape.size(); ++d)
        inner *= in[0].shape[d];
      for (size_t d = 0; d < dim; ++d)
        outer *= in[0].shape[d];
      const LaunchShape shape = elementwiseLaunch(outer * inner);
      if (shape.blocks)
        softmaxKernel<<<shape.blocks, shape.threads, 0, streamOf(s)>>>(in[0].f32(), out[0].f32(), outer,
                                                                       in[0].shape[dim], inner);
    };
    for (const char *name : {"cross_entropy", "cross_entropy_grad"})
      t[name] = [op = std::string(name)](const ir::AttrMap &attrs, In in, In out, const KernelContext &context,
                                         GpuStream &s) { crossEntropy(op, attrs, in, out, context, streamOf(s)); };
    // The vocabulary-parallel cross-entropy's steps: in[0] the logits but for the loss's.
    auto tokensOf = [](const ir::AttrMap &attrs, const KernelContext &context, int64_t rows) {
      return static_cast<double>(context.scored > 0 ? context.scored : ir::intAttr(attrs, "tokens", rows));
    };
    t["vocab_parallel_max"] = [](const ir::AttrMap &, In in, In out, const KernelContext &, GpuStream &s) {
      const int64_t V = std::max<int64_t>(in[0].shape.back(), 1), rows = in[0].numel() / V;
      const LaunchShape shape = elementwiseLaunch(rows);
      if (shape.blocks)
        vocabMaxKernel<<<shape.blocks, shape.threads, 0, streamOf(s)>>>(in[0].f32(), out[0].f32(), rows, V);
    };
    t["vocab_parallel_sums"] = [](const ir::AttrMap &attrs, In in, In out, const KernelContext &, GpuStream &s) {
      const int64_t V = std::max<int64_t>(in[0].shape.back(), 1), rows = in[0].numel() / V;
      const LaunchShape shape = elementwiseLaunch(rows);
      if (shape.blocks)
        vocabSumsKernel<<<shape.blocks, shape.threads, 0, streamOf(s)>>>(
            in[0].f32(), in[1].i32(), in[2].f32(), out[0].f32(), rows, V, ir::intAttr(attrs, "vocab_offset"));
    };
    t["vocab_parallel_loss"] = [tokensOf](const ir::AttrMap &attrs, In in, In out, const KernelContext &context,
                                          GpuStream &s) {
      const int64_t rows = in[1].numel();
      vocabLossKernel<<<1, 1, 0, streamOf(s)>>>(in[0].i32(), in[1].f32(), in[2].f32(), rows,
                                                tokensOf(attrs, context, rows), out[0].f32());
    };
    t["vocab_parallel_grad"] = [tokensOf](const ir::AttrMap &attrs, In in, In out, const KernelContext &context,
                                          GpuStream &s) {
      const int64_t V = std::max<int64_t>(in[0].shape.back(), 1), rows = in[0].numel() / V;
      const LaunchShape shape = elementwiseLaunch(rows * V);
      if (shape.blocks)
        vocabGradKernel<<<shape.blocks, shape.threads, 0, streamOf(s)>>>(
            in[0].f32(), in[1].i32(), in[2].f32(), in[3].f32(), in[4].f32(), out[0].f32(), rows, V,
            ir::intAttr(attrs, "vocab_offset"), tokensOf(attrs, context, rows));
    };
    t["embedding"] = [](const ir::AttrMap &attrs, In in, In out, const KernelContext &, GpuStream &s) {
      const int64_t V = in[0].shape[0], D = in[0].shape[1], count = in[1].numel();
      const LaunchShape shape = elementwiseLaunch(count * D);
      if (shape.blocks)
        embeddingKernel<<<shape.blocks, shape.threads, 0, streamOf(s)>>>(in[0].f32(), in[1].i32(), out[0].f32(), count,
                                                                         V, D, ir::intAttr(attrs, "vocab_offset"));
    };
    t["embedding_grad"] = [](const ir::AttrMap &attrs, In in, In out, const KernelContext &, GpuStream &s) {
      const int64_t V = out[0].shape[0], D = out[0].shape[1], count = in[0].numel();
      const LaunchShape shape = elementwiseLaunch(V * D);
      if (shape.blocks)
        embeddingGradKernel<<<shape.blocks, shape.threads, 0, streamOf(s)>>>(
            in[0].i32(), in[1].f32(), out[0].f32(), count, V, D, ir::intAttr(attrs, "vocab_offset"));
    };
    t["adamw"] = [](const ir::AttrMap &attrs, In in, In out, const KernelContext &context, GpuStream &s) {
      expect(in.size() == 4 && out.size() == 1, "adamw", "expects param, grad, m, v -> param");
      const double beta1 = ir::floatAttr(attrs, "beta1", 0.9), beta2 = ir::floatAttr(attrs, "beta2", 0.999);
      const LaunchShape shape = elementwiseLaunch(out[0].numel());
      if (shape.blocks)
        adamwKernel<<<shape.blocks, shape.threads, 0, streamOf(s)>>>(
            out[0].f32(), in[1].f32(), in[2].f32(), in[3].f32(), out[0].numel(), ir::floatAttr(attrs, "lr", 1e-3),
            beta1, beta2, ir::floatAttr(attrs, "eps", 1e-8), ir::floatAttr(attrs, "weight_decay", 0.01),
            1 - std::pow(beta1, static_cast<double>(context.step)),
            1 - std::pow(beta2, static_cast<double>(context.step)));
    };
    t["sgd"] = [](const ir::AttrMap &attrs, In in, In out, const KernelContext &context, GpuStream &s) {
      const LaunchShape shape = elementwiseLaunch(out[0].numel());
      if (shape.blocks)
        sgdKernel<<<shape.blocks, shape.threads, 0, streamOf(s)>>>(
            out[0].f32(), in[1].f32(), in.size() > 2 ? in[2].f32() : nullptr, out[0].numel(),
            ir::floatAttr(attrs, "lr", 1e-2), ir::floatAttr(attrs, "momentum", 0.0),
            ir::floatAttr(attrs, "weight_decay", 0.0), context.step == 1);
    };
    t["matmul"] = [](const ir::AttrMap &, In in, In out, const KernelContext &, GpuStream &s) { matmul(in, out, s); };
    return t;
  }();
  return table;
}

} // namespace

bool gpuAvailable(std::string *why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why)
      *why = std::string("CUDA: ") + cudaGetErrorString(status);
    return false;
  }
  if (count == 0) {
    if (why)
      *why = "CUDA sees no GPU";
    return false;
  }
  return true;
}

int gpuCount() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

void useGpu(int ordinal) {
  check(cudaSetDevice(ordinal), "cudaSetDevice");
}

std::string gpuName(int device) {
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  return properties.name;
}

bool loadBlas(std::string *why) {
  try {
    cublas();
    return true;
  } catch (const KernelError &e) {
    if (why)
      *why = e.what();
    return false;
  }
}

GpuStream::GpuStream() {
  cublas(); // before the stream: a cuBLAS that cannot be loaded leaves nothing behind
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  stream_ = stream;
  cublasHandle_t handle = nullptr;
  checkBlas(cublas().create(&handle), "cublasCreate");
  blas_ = handle;
  checkBlas(cublas().setStream(handle, stream), "cublasSetStream");
  // fp32 products stay fp32 (no TF32 tensor cores): results comparable with the CPU's.
  checkBlas(cublas().setMathMode(handle, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
}

GpuStream::~GpuStream() {
  if (blas_)
    cublas().destroy(static_cast<cublasHandle_t>(blas_));
  if (stream_)
    cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void GpuStream::synchronize() {
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "a kernel on the GPU");
}

DeviceBuffer::DeviceBuffer(int64_t bytes) {
  check(cudaMalloc(&data_, static_cast<size_t>(std::max<int64_t>(bytes, 1))), "cudaMalloc");
}

DeviceBuffer::~DeviceBuffer() {
  cudaFree(data_);
}

void DeviceBuffer::upload(const void *host, int64_t bytes, int64_t offset) {
  check(cudaMemcpy(static_cast<char *>(data_) + offset, host, static_cast<size_t>(bytes), cudaMemcpyHostToDevice),
        "cudaMemcpy to the GPU");
}

void DeviceBuffer::download(void *host, int64_t bytes, int64_t offset) const {
  check(cudaMemcpy(host, static_cast<const char *>(data_) + offset, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost),
        "cudaMemcpy from the GPU");
}

void copyBox(int elementBytes, const void *src, const std::vector<int64_t> &srcShape, const std::vector<int64_t> &srcLo,
             void *dst, const std::vector<int64_t> &dstShape, const std::vector<int64_t> &dstLo,
             const std::vector<int64_t> &size, bool add, GpuStream &stream) {
  stridedCopy(src, dst, elementBytes, boxCopy(srcShape, srcLo, dstShape, dstLo, size), add, streamOf(stream));
  check(cudaGetLastError(), "a copy on the GPU");
}

void zeroBytes(void *dst, int64_t bytes, GpuStream &stream) {
  check(cudaMemsetAsync(dst, 0, static_cast<size_t>(bytes), streamOf(stream)), "cudaMemsetAsync");
}

void copyToGpu(void *dst, const void *src, int64_t bytes, GpuStream &stream) {
  check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, streamOf(stream)),
        "cudaMemcpyAsync to the GPU");
  stream.synchronize();
}

void copyToHost(void *dst, const void *src, int64_t bytes, GpuStream &stream) {
  check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, streamOf(stream)),
        "cudaMemcpyAsync from the GPU");
  stream.synchronize();
}

std::vector<std::string> gpuKernelNames() {
  std::vector<std::string> names;
  for (const auto &[name, _] : runners())
    names.push_back(name);
  for (const char *name : {"reshape", "transpose", "unbind", "split", "concat", "slice", "pad", "sum", "mean",
                           "attention", "attention_grad"})
    names.push_back(name);
  return names;
}

namespace {

// Kernels that take bf16 tensors as they are: products (bf16 on tensor cores), the elementwise
// kernels (they read and write bf16, computing in f32: bit for bit the widened kernel's
// rounded result), and layout ops that only move elements where every tensor has one type
// (a bf16 copied is a bf16 widened, copied and rounded back). The others run on widened copies.
bool readsBf16(const std::string &op, std::span<const TensorView> inputs, std::span<const TensorView> outputs) {
  static const std::set<std::string> elementwise = {"add",       "sub",       "mul",     "div",       "neg",
                                                    "gelu",      "silu",      "relu",    "gelu_grad", "silu_grad",
                                                    "relu_grad", "broadcast", "constant"},
                                     moves = {"reshape", "transpose", "unbind", "split", "concat", "slice", "pad"};
  if (op == "matmul" || elementwise.count(op))
    return true;
  if (!moves.count(op))
    return false;
  auto same = [&](const TensorView &t) { return t.dtype == (inputs.empty() ? outputs[0] : inputs[0]).dtype; };
  return std::all_of(inputs.begin(), inputs.end(), same) && std::all_of(outputs.begin(), outputs.end(), same);
}

} // namespace

void runKernel(const std::string &op, const ir::AttrMap &attrs, std::span<const TensorView> inputs,
               std::span<const TensorView> outputs, const KernelContext &context, GpuStream &stream) {
  // bf16 tensors: the kernel runs in f32 on widened copies (outputs too: a kernel may add to
  // what its output holds), and what it wrote is rounded back; the copies are freed in stream
  // order. Products are the exception: bf16 on tensor cores (matmul).
  auto bf16 = [](const TensorView &t) { return t.dtype == ir::DType::BF16; };
  if (!readsBf16(op, inputs, outputs) &&
      (std::any_of(inputs.begin(), inputs.end(), bf16) || std::any_of(outputs.begin(), outputs.end(), bf16))) {
    const cudaStream_t on = streamOf(stream);
    std::vector<std::unique_ptr<Scratch>> wide;
    auto widened = [&](std::span<const TensorView> views) {
      std::vector<TensorView> out(views.begin(), views.end());
      for (TensorView &t : out)
        if (bf16(t)) {
          const int64_t n = t.numel();
          wide.push_back(std::make_unique<Scratch>(std::max<int64_t>(n, 1) * 4, on));
          if (const LaunchShape shape = elementwiseLaunch(n); shape.blocks)
            widenKernel<<<shape.blocks, shape.threads, 0, on>>>(static_cast<const uint16_t *>(t.data),
                                                                wide.back()->as<float>(), n);
          t = TensorView{wide.back()->as<float>(), ir::DType::F32, t.shape};
        }
      return out;
    };
    const std::vector<TensorView> in = widened(inputs), out = widened(outputs);
    runKernel(op, attrs, in, out, context, stream);
    for (size_t i = 0; i < outputs.size(); ++i)
      if (const LaunchShape shape = elementwiseLaunch(outputs[i].numel()); bf16(outputs[i]) && shape.blocks)
        narrowKernel<<<shape.blocks, shape.threads, 0, on>>>(out[i].f32(), static_cast<uint16_t *>(outputs[i].data),
                                                             outputs[i].numel());
    check(cudaGetLastError(), op.c_str());
    return;
  }
  for (const TensorView &t : inputs)
    expect(t.dtype == ir::DType::F32 || t.dtype == ir::DType::I32 || (bf16(t) && readsBf16(op, inputs, outputs)), op,
           "the GPU kernels take f32 and i32 tensors");
  if (auto it = runners().find(op); it != runners().end())
    it->second(attrs, inputs, outputs, context, stream);
  else if (!layoutKernel(op, attrs, inputs, outputs, streamOf(stream)) &&
           !attentionKernel(op, attrs, inputs, outputs, context, streamOf(stream)))
    throw KernelError("no GPU kernel for '" + op + "' yet (docs/gpu.md)");
  check(cudaGetLastError(), op.c_str());
}

} // namespace hspmd::runtime::gpu
