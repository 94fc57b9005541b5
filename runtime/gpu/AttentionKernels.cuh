// AttentionKernels.cuh - causal attention with grouped KV heads, query and key offsets and
// documents (runtime/kernels/Attention.cpp's contract), forward and backward. On bf16 tensors,
// heads of multiples of 16 up to 128 run on tensor cores (runtime/gpu/TensorCoreAttention.cuh).
// Otherwise heads of up to 128 values run in f32 tiles
// (runtime/gpu/TiledAttention.cuh: 32 query rows a block, K and V read once for them). Larger heads, or a GPU whose
// blocks cannot hold the tiles' shared memory, take the row kernels below: one block per (batch, head, query row), keys
// in chunks with an online softmax (no [S, T] matrix in memory); their backward pass recomputes each row's maximum and
// sum, then adds its share of dK and dV atomically. Part of KernelTable.cuh (which includes it),
// and so also run on CPU threads by the tests, the row kernels included.
#pragma once

#include "runtime/gpu/KernelSupport.cuh"
#include "runtime/gpu/Launch.h"
#include "runtime/gpu/TensorCoreAttention.cuh"
#include "runtime/gpu/TiledAttention.cuh"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace hspmd::runtime::gpu {

namespace {

constexpr int kRowThreads = 128, kChunk = 128;

using Dims = AttentionDims;

HSPMD_DEVICE inline float rowDot(const float *a, const float *b, int64_t n) {
  float sum = 0;
  for (int64_t j = 0; j < n; ++j)
    sum += a[j] * b[j];
  return sum;
}

// Thread 0's serial reductions over a chunk, shared with the block.
HSPMD_DEVICE inline float chunkMax(const float *values, int count, float *slot) {
  __syncthreads();
  if (threadIdx.x == 0) {
    float top = -INFINITY;
    for (int t = 0; t < count; ++t)
      top = fmaxf(top, values[t]);
    *slot = top;
  }
  __syncthreads();
  return *slot;
}

HSPMD_DEVICE inline float chunkSum(const float *values, int count, float *slot) {
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0;
    for (int t = 0; t < count; ++t)
      sum += values[t];
    *slot = sum;
  }
  __syncthreads();
  return *slot;
}

// Each row's maximum score and softmax sum over its visible keys (shared memory `scores`
// holds a chunk's scores).
HSPMD_DEVICE inline void rowStatistics(const Dims &n, const float *q, const float *k, int64_t b, int64_t kv, int64_t lo,
                                       int64_t hi, float *scores, float *slot, float &peak, float &sum) {
  peak = -INFINITY;
  sum = 0;
  for (int64_t c = lo; c < hi; c += kChunk) {
    const int count = static_cast<int>(hi - c < kChunk ? hi - c : kChunk);
    for (int t = threadIdx.x; t < count; t += blockDim.x)
      scores[t] = rowDot(q, k + ((b * n.T + c + t) * n.Hk + kv) * n.D, n.D) * n.scale;
    const float top = fmaxf(peak, chunkMax(scores, count, slot));
    for (int t = threadIdx.x; t < count; t += blockDim.x)
      scores[t] = expf(scores[t] - top);
    const float added = chunkSum(scores, count, slot);
    sum = sum * (peak == -INFINITY ? 0.0f : expf(peak - top)) + added;
    peak = top;
  }
}

HSPMD_KERNEL void rowAttentionForward(Dims n, const float *q, const float *k, const float *v, float *y) {
  HSPMD_SHARED_FLOATS(shared);
  float *qs = shared, *acc = qs + n.D, *scores = acc + n.Dv, *slot = scores + kChunk;
  for (int64_t item = blockIdx.x; item < n.B * n.H * n.S; item += gridDim.x) {
    const int64_t b = item / (n.H * n.S), h = item / n.S % n.H, s = item % n.S, kv = h / n.group;
    int64_t lo, hi;
    visibleKeys(n, b, s, lo, hi);
    __syncthreads();
    for (int64_t j = threadIdx.x; j < n.D; j += blockDim.x)
      qs[j] = q[((b * n.S + s) * n.H + h) * n.D + j];
    for (int64_t j = threadIdx.x; j < n.Dv; j += blockDim.x)
      acc[j] = 0;
    float peak = -INFINITY, sum = 0;
    for (int64_t c = lo; c < hi; c += kChunk) {
      const int count = static_cast<int>(hi - c < kChunk ? hi - c : kChunk);
      __syncthreads();
      for (int t = threadIdx.x; t < count; t += blockDim.x)
        scores[t] = rowDot(qs, k + ((b * n.T + c + t) * n.Hk + kv) * n.D, n.D) * n.scale;
      const float top = fmaxf(peak, chunkMax(scores, count, slot));
      for (int t = threadIdx.x; t < count; t += blockDim.x)
        scores[t] = expf(scores[t] - top);
      const float added = chunkSum(scores, count, slot);
      const float shrink = peak == -INFINITY ? 0.0f : expf(peak - top);
      for (int64_t j = threadIdx.x; j < n.Dv; j += blockDim.x) {
        float a = acc[j] * shrink;
        for (int t = 0; t < count; ++t)
          a += scores[t] * v[((b * n.T + c + t) * n.Hk + kv) * n.Dv + j];
        acc[j] = a;
      }
      sum = sum * shrink + added;
      peak = top;
    }
    __syncthreads();
    for (int64_t j = threadIdx.x; j < n.Dv; j += blockDim.x)
      y[((b * n.S + s) * n.H + h) * n.Dv + j] = sum > 0 ? acc[j] / sum : 0.0f;
  }
}

// dS = P (dP - delta) scale with dP = dY v^T and delta = rowsum(P dP); dQ = dS k, dK += dS^T q,
// dV += P^T dY.
HSPMD_KERNEL void rowAttentionBackward(Dims n, const float *q, const float *k, const float *v, const float *dy,
                                       float *dq, float *dk, float *dv) {
  HSPMD_SHARED_FLOATS(shared);
  float *qs = shared, *dys = qs + n.D, *dqs = dys + n.Dv, *p = dqs + n.D, *dp = p + kChunk, *slot = dp + kChunk;
  for (int64_t item = blockIdx.x; item < n.B * n.H * n.S; item += gridDim.x) {
    const int64_t b = item / (n.H * n.S), h = item / n.S % n.H, s = item % n.S, kv = h / n.group;
    int64_t lo, hi;
    visibleKeys(n, b, s, lo, hi);
    __syncthreads();
    for (int64_t j = threadIdx.x; j < n.D; j += blockDim.x) {
      qs[j] = q[((b * n.S + s) * n.H + h) * n.D + j];
      dqs[j] = 0;
    }
    for (int64_t j = threadIdx.x; j < n.Dv; j += blockDim.x)
      dys[j] = dy[((b * n.S + s) * n.H + h) * n.Dv + j];
    __syncthreads();
    float peak, sum;
    rowStatistics(n, qs, k, b, kv, lo, hi, p, slot, peak, sum);
    const float inverse = sum > 0 ? 1.0f / sum : 0.0f;
    // P and dP of a chunk.
    auto chunk = [&](int64_t c, int count) {
      __syncthreads();
      for (int t = threadIdx.x; t < count; t += blockDim.x) {
        p[t] = expf(rowDot(qs, k + ((b * n.T + c + t) * n.Hk + kv) * n.D, n.D) * n.scale - peak) * inverse;
        dp[t] = rowDot(dys, v + ((b * n.T + c + t) * n.Hk + kv) * n.Dv, n.Dv);
      }
      __syncthreads();
    };
    float delta = 0;
    for (int64_t c = lo; c < hi; c += kChunk) {
      const int count = static_cast<int>(hi - c < kChunk ? hi - c : kChunk);
      chunk(c, count);
      for (int t = threadIdx.x; t < count; t += blockDim.x)
        dp[t] *= p[t];
      delta += chunkSum(dp, count, slot);
    }
    for (int64_t c = lo; c < hi; c += kChunk) {
      const int count = static_cast<int>(hi - c < kChunk ? hi - c : kChunk);
      chunk(c, count);
      for (int t = threadIdx.x; t < count; t += blockDim.x)
        dp[t] = p[t] * (dp[t] - delta) * n.scale; // dS
      __syncthreads();
      for (int64_t j = threadIdx.x; j < n.D; j += blockDim.x) {
        float a = dqs[j];
        for (int t = 0; t < count; ++t)
          a += dp[t] * k[((b * n.T + c + t) * n.Hk + kv) * n.D + j];
        dqs[j] = a;
      }
      for (int64_t e = threadIdx.x; e < count * n.D; e += blockDim.x) {
        const int64_t t = e / n.D, j = e % n.D;
        atomicAdd(dk + ((b * n.T + c + t) * n.Hk + kv) * n.D + j, dp[t] * qs[j]);
      }
      for (int64_t e = threadIdx.x; e < count * n.Dv; e += blockDim.x) {
        const int64_t t = e / n.Dv, j = e % n.Dv;
        atomicAdd(dv + ((b * n.T + c + t) * n.Hk + kv) * n.Dv + j, p[t] * dys[j]);
      }
    }
    __syncthreads();
    for (int64_t j = threadIdx.x; j < n.D; j += blockDim.x)
      dq[((b * n.S + s) * n.H + h) * n.D + j] = dqs[j];
  }
}

// The tiled kernels, where they take the heads and the GPU gives a block their shared memory
// (over 48 KiB needs asking: heads of 128 values take 53 KiB forward, 74 KiB backward); false
// where they do not (the row kernels run).
bool tiledLaunch(const Dims &n, bool forward, const TensorView &q, const TensorView &k, const TensorView &v, In in,
                 In out, cudaStream_t stream) {
  if (!tiled::takes(n.D, n.Dv))
    return false;
  const size_t shared = forward ? tiled::forwardSharedBytes(n.D, n.Dv) : tiled::backwardSharedBytes(n.D, n.Dv);
  const void *kernel = forward ? reinterpret_cast<const void *>(&tiled::attentionForward)
                               : reinterpret_cast<const void *>(&tiled::attentionBackward);
  if (shared > 48 * 1024 && cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(shared)) != cudaSuccess) {
    (void)cudaGetLastError(); // the GPU's limit is lower: not an error of the run
    return false;
  }
  const int64_t items = tiled::items(n);
  const int64_t blocks = items < kMaxBlocks ? items : kMaxBlocks;
  if (blocks == 0)
    return true;
  if (forward)
    launchKernel(blocks, tiled::kThreads, shared, stream, tiled::attentionForward, n, q.f32(), k.f32(), v.f32(),
                 out[0].f32());
  else
    launchKernel(blocks, tiled::kThreads, shared, stream, tiled::attentionBackward, n, q.f32(), k.f32(), v.f32(),
                 in[3].f32(), out[0].f32(), out[1].f32(), out[2].f32());
  return true;
}

/// HSPMD_GPU_ATTENTION, read once: `rows` runs the row kernels for every head, `tiles` the f32
/// tiled kernels where they take the heads (bf16 on widened copies, no tensor cores); anything
/// else, or nothing, the fastest kernel that takes them (bench_gpu's comparisons).
inline std::string attentionKernelsAsked() {
  static const std::string kind = [] {
    const char *asked = std::getenv("HSPMD_GPU_ATTENTION");
    return std::string(asked ? asked : "");
  }();
  return kind;
}

inline bool rowKernelsAsked() {
  return attentionKernelsAsked() == "rows";
}

/// Whether attention (or its gradient) takes these tensors as they are, in bf16, on tensor cores
/// (TensorCoreAttention.cuh): every tensor bf16, heads it takes, a GPU with bf16 tensor cores and
/// the kernels' shared memory, and neither the row kernels nor the f32 tiles asked for
/// (`others`: attentionKernelsAsked()). Else the dispatch widens them (Dispatch.cuh).
inline bool tensorAttentionTakes(const std::string &op, In in, In out,
                                 bool others = attentionKernelsAsked() == "rows" ||
                                               attentionKernelsAsked() == "tiles") {
  const bool forward = op == "attention";
  if ((!forward && op != "attention_grad") || others || in.size() != (forward ? 3u : 4u) ||
      out.size() != (forward ? 1u : 3u))
    return false;
  for (In tensors : {in, out})
    for (const TensorView &t : tensors)
      if (t.dtype != ir::DType::BF16 || t.shape.size() != 4)
        return false;
  const int64_t D = in[0].shape[3], Dv = in[2].shape[3];
  return tensor::takes(D, Dv) &&
         tensorCores(forward ? tensor::forwardSharedBytes(D, Dv) : tensor::backwardSharedBytes(D, Dv));
}

// The tensor-core kernels' launches: the forward pass, or the backward pass's rows kernel (dQ,
// and each row's log-sum-exp and delta in scratch) then its keys kernel (dK, dV).
void tensorLaunch(const Dims &n, bool forward, In in, In out, cudaStream_t stream) {
  auto bf16 = [](const TensorView &t) { return static_cast<uint16_t *>(t.data); };
  auto blocks = [](int64_t items) { return items < kMaxBlocks ? items : kMaxBlocks; };
  auto ask = [](const void *kernel, int64_t bytes) {
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
          "cudaFuncSetAttribute");
  };
  const int64_t rowItems = tiled::items(n, tensor::kRows);
  if (forward) {
    const int64_t bytes = tensor::rowsLayout(n.D, n.Dv, false).bytes;
    ask(reinterpret_cast<const void *>(&tensor::attentionForward), bytes);
    if (rowItems > 0)
      launchKernel(blocks(rowItems), tensor::kThreads, static_cast<size_t>(bytes), stream, tensor::attentionForward, n,
                   static_cast<const uint16_t *>(bf16(in[0])), static_cast<const uint16_t *>(bf16(in[1])),
                   static_cast<const uint16_t *>(bf16(in[2])), bf16(out[0]));
    return;
  }
  const int64_t rowBytes = tensor::rowsLayout(n.D, n.Dv, true).bytes, keyBytes = tensor::keysLayout(n.D, n.Dv).bytes;
  ask(reinterpret_cast<const void *>(&tensor::attentionBackwardRows), rowBytes);
  ask(reinterpret_cast<const void *>(&tensor::attentionBackwardKeys), keyBytes);
  void *stats = nullptr;
  check(cudaMallocAsync(&stats, static_cast<size_t>(std::max<int64_t>(n.B * n.H * n.S, 1)) * 2 * sizeof(float), stream),
        "cudaMallocAsync");
  const auto *q = static_cast<const uint16_t *>(bf16(in[0])), *k = static_cast<const uint16_t *>(bf16(in[1])),
             *v = static_cast<const uint16_t *>(bf16(in[2])), *dy = static_cast<const uint16_t *>(bf16(in[3]));
  if (rowItems > 0)
    launchKernel(blocks(rowItems), tensor::kThreads, static_cast<size_t>(rowBytes), stream,
                 tensor::attentionBackwardRows, n, q, k, v, dy, bf16(out[0]), static_cast<float *>(stats));
  if (const int64_t keyItems = tensor::keyItems(n); keyItems > 0)
    launchKernel(blocks(keyItems), tensor::kThreads, static_cast<size_t>(keyBytes), stream,
                 tensor::attentionBackwardKeys, n, q, k, v, dy, static_cast<const float *>(stats), bf16(out[1]),
                 bf16(out[2]));
  check(cudaFreeAsync(stats, stream), "cudaFreeAsync");
}

/// attention and attention_grad (false for other ops): on bf16 tensors on tensor cores
/// (tensorAttentionTakes; the dispatch widens the others), f32 tensors in tiles where they take
/// the heads, else (or with `rows`) in the row kernels.
bool attentionKernel(const std::string &op, const ir::AttrMap &attrs, In in, In out, const KernelContext &context,
                     cudaStream_t stream, bool rows = rowKernelsAsked()) {
  if (op != "attention" && op != "attention_grad")
    return false;
  const TensorView &q = in[0], &k = in[1], &v = in[2];
  kernels::expect(q.shape.size() == 4 && k.shape.size() == 4 && v.shape.size() == 4, op,
                  "q, k and v need 4 dimensions");
  Dims n{q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3],
         1,          0,          false,      0,          0,          0,          nullptr};
  if (n.H == 0 && n.Hk == 0)
    return true; // a device with no heads of an unequal head split
  kernels::expect(n.Hk > 0 && n.H % n.Hk == 0, op, "query heads must be a multiple of key/value heads");
  n.group = n.H / n.Hk;
  n.scale = static_cast<float>(ir::floatAttr(attrs, "scale", 1.0 / std::sqrt(static_cast<double>(n.D))));
  n.causal = ir::boolAttr(attrs, "causal");
  n.queryOffset = ir::intAttr(attrs, "query_offset");
  n.keyOffset = ir::intAttr(attrs, "key_offset");
  const bool onTensorCores = tensorAttentionTakes(op, in, out, rows);
  if (!onTensorCores)
    for (In tensors : {in, out})
      for (const TensorView &t : tensors)
        kernels::expect(t.dtype == ir::DType::F32, op, "bf16 attention runs on tensor cores or on widened copies");
  void *starts = nullptr;
  if (context.blockStarts) {
    kernels::expect(n.causal, op, "documents need causal attention");
    kernels::expect(n.queryOffset + n.S <= context.seq && n.keyOffset + n.T <= context.seq, op,
                    "the piece lies outside the batch's sequences");
    n.seq = context.seq;
    if (context.blockStartsOnGpu) { // the offload's copy of the step's block starts
      n.starts = context.blockStarts + context.row * context.seq;
    } else { // from the host's, for this call
      const size_t bytes = static_cast<size_t>(n.B * n.seq) * sizeof(int32_t);
      check(cudaMallocAsync(&starts, bytes, stream), "cudaMallocAsync");
      check(cudaMemcpyAsync(starts, context.blockStarts + context.row * context.seq, bytes, cudaMemcpyHostToDevice,
                            stream),
            "cudaMemcpyAsync");
      n.starts = static_cast<const int32_t *>(starts);
    }
  }
  const bool forward = op == "attention";
  if (onTensorCores) {
    tensorLaunch(n, forward, in, out, stream);
    if (starts)
      check(cudaFreeAsync(starts, stream), "cudaFreeAsync");
    return true;
  }
  if (!forward) {
    check(cudaMemsetAsync(out[1].data, 0, static_cast<size_t>(out[1].numel()) * 4, stream), "cudaMemsetAsync");
    check(cudaMemsetAsync(out[2].data, 0, static_cast<size_t>(out[2].numel()) * 4, stream), "cudaMemsetAsync");
  }
  if (!rows && tiledLaunch(n, forward, q, k, v, in, out, stream)) {
    if (starts)
      check(cudaFreeAsync(starts, stream), "cudaFreeAsync");
    return true;
  }
  const LaunchShape shape = rowLaunch(n.B * n.H * n.S, kRowThreads);
  if (forward) {
    const size_t shared = static_cast<size_t>(n.D + n.Dv + kChunk + 1) * sizeof(float);
    if (shape.blocks)
      launchKernel(shape.blocks, kRowThreads, shared, stream, rowAttentionForward, n, q.f32(), k.f32(), v.f32(),
                   out[0].f32());
  } else {
    const size_t shared = static_cast<size_t>(2 * n.D + n.Dv + 2 * kChunk + 1) * sizeof(float);
    if (shape.blocks)
      launchKernel(shape.blocks, kRowThreads, shared, stream, rowAttentionBackward, n, q.f32(), k.f32(), v.f32(),
                   in[3].f32(), out[0].f32(), out[1].f32(), out[2].f32());
  }
  if (starts)
    check(cudaFreeAsync(starts, stream), "cudaFreeAsync");
  return true;
}

} // namespace
} // namespace hspmd::runtime::gpu
