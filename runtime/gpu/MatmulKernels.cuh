// MatmulKernels.cuh - y = a b with numpy's batch broadcasting, as products of a column-major
// GEMM: Kernels.cu gives it cuBLAS (CublasGemm); the tests give it a reference GEMM with cuBLAS's
// conventions and run the rest on CPU threads (runtime/gpu/Emulation.h), so that the layout
// trick below, the batch broadcasting and the rounding of f32 operands are checked without a GPU.
//
// Row-major matrices are column-major ones transposed: for y = a b (a: rows x K, b: K x N,
// row-major), y^T = b^T a^T is the column-major product of b (N x K, leading dimension N) and
// a (K x rows, leading dimension K) into y (N x rows, leading dimension N). In fp32 when every
// tensor is f32; otherwise (bf16 storage) a bf16 product, an f32 operand (a parameter: its master
// copy stays f32) rounded to bf16 in scratch first, the result in its buffer's type.
#pragma once

#include "runtime/Kernels.h"
#include "runtime/gpu/ElementwiseKernels.cuh"
#include "runtime/gpu/Emulation.h"
#include "runtime/gpu/GpuKernels.h"
#include "runtime/gpu/KernelSupport.cuh"
#include "runtime/gpu/KernelTable.cuh"
#include "runtime/gpu/Launch.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace hspmd::runtime::gpu {

/// One column-major product C (m x n) = op(A) (m x k) op(B) (k x n), f32 accumulation: f32
/// operands and result, or bf16 operands and a bf16 or f32 result. op(X) is X, or with `transX`
/// X^T (X stored k x m for A, n x k for B), as cuBLAS's CUBLAS_OP_T.
struct GemmArgs {
  int m, n, k;
  const void *A;
  int lda;
  const void *B;
  int ldb;
  void *C;
  int ldc;
  bool bf16Operands, bf16Result;
  bool transA, transB;
};

namespace {

HSPMD_KERNEL void roundToBf16Kernel(const float *in, uint16_t *out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = bf16BitsOf(in[i]);
}

// The operands of one bf16 product: an f32 one rounded to bf16 in scratch first (freed in
// stream order, after the products).
class Bf16Operands {
public:
  Bf16Operands(bool bf16, cudaStream_t stream) : bf16_(bf16), stream_(stream) {}
  const char *operator()(const TensorView &t) {
    if (!bf16_ || t.dtype == ir::DType::BF16)
      return static_cast<const char *>(t.data);
    const int64_t n = t.numel();
    narrowed_.push_back(std::make_unique<Scratch>(std::max<int64_t>(n, 1) * 2, stream_));
    if (const LaunchShape shape = elementwiseLaunch(n); shape.blocks)
      launchKernel(shape.blocks, shape.threads, 0, stream_, roundToBf16Kernel, t.f32(),
                   narrowed_.back()->as<uint16_t>(), n);
    return narrowed_.back()->as<const char>();
  }

private:
  bool bf16_;
  cudaStream_t stream_;
  std::vector<std::unique_ptr<Scratch>> narrowed_;
};

/// y = a b through `gemm` (a callable taking GemmArgs).
template <typename Gemm> void matmulWith(const Gemm &gemm, In in, In out, cudaStream_t stream) {
  const TensorView &a = in[0], &b = in[1], &y = out[0];
  expect(a.shape.size() >= 2 && b.shape.size() >= 2, "matmul", "operands need at least 2 dimensions");
  const int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
  expect(b.shape[b.shape.size() - 2] == K && y.shape.back() == N, "matmul", "shapes do not fit");
  const bool bf16 = a.dtype == ir::DType::BF16 || b.dtype == ir::DType::BF16 || y.dtype == ir::DType::BF16;
  const int64_t yBytes = y.dtype == ir::DType::BF16 ? 2 : 4, operandBytes = bf16 ? 2 : 4;
  if (M * N == 0)
    return;
  if (K == 0) {
    check(cudaMemsetAsync(y.data, 0, static_cast<size_t>(y.numel() * yBytes), stream), "cudaMemsetAsync");
    return;
  }
  Bf16Operands operand(bf16, stream);
  const char *A = operand(a), *B = operand(b);
  char *Y = static_cast<char *>(y.data);
  const bool bf16Result = y.dtype == ir::DType::BF16;
  // y (rows x N, row-major) = a (rows x K) b (K x N): column-major, y^T = b^T a^T.
  auto product = [&](int64_t rows, const char *a0, const char *b0, char *y0) {
    gemm(GemmArgs{static_cast<int>(N), static_cast<int>(rows), static_cast<int>(K), b0, static_cast<int>(N), a0,
                  static_cast<int>(K), y0, static_cast<int>(N), bf16, bf16Result, false, false});
  };
  if (b.shape.size() == 2) { // every row of a against one matrix
    product(a.numel() / K, A, B, Y);
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
    product(M, A + ia * M * K * operandBytes, B + ib * K * N * operandBytes, Y + i * M * N * yBytes);
  }
}

/// Whether a fused product is a bf16 one: asked for, or a bf16 operand or result (cuBLAS's
/// sgemm takes f32 alone).
inline bool bf16Product(const FusedProduct &p) {
  return p.bf16 || p.a.dtype == ir::DType::BF16 || p.b.dtype == ir::DType::BF16 || p.out.dtype == ir::DType::BF16;
}

/// GpuKernels.h's fusedMatmul through `gemm`: y^T (N x M, column-major) = op(b)^T op(a)^T, where b
/// as stored is op(b)^T, or its transpose (and a likewise).
template <typename Gemm> void fusedMatmulWith(const Gemm &gemm, const FusedProduct &p, cudaStream_t stream) {
  expect(p.M * p.K <= p.a.numel() && p.K * p.N <= p.b.numel() && p.M * p.N <= p.out.numel(), "matmul",
         "shapes do not fit");
  expect(p.M <= INT32_MAX && p.N <= INT32_MAX && p.K <= INT32_MAX, "matmul", "a dimension past 2^31");
  const bool bf16Result = p.out.dtype == ir::DType::BF16, bf16 = bf16Product(p);
  const size_t yBytes = static_cast<size_t>(p.M * p.N) * (bf16Result ? 2 : 4);
  if (p.M * p.N == 0)
    return;
  if (p.K == 0) {
    check(cudaMemsetAsync(p.out.data, 0, yBytes, stream), "cudaMemsetAsync");
    return;
  }
  Bf16Operands operand(bf16, stream);
  const char *A = operand(p.a), *B = operand(p.b);
  std::unique_ptr<Scratch> staged;
  if (p.scratch)
    staged = std::make_unique<Scratch>(static_cast<int64_t>(yBytes), stream);
  void *Y = p.scratch ? staged->as<void>() : p.out.data;
  gemm(GemmArgs{static_cast<int>(p.N), static_cast<int>(p.M), static_cast<int>(p.K), B,
                static_cast<int>(p.transB ? p.K : p.N), A, static_cast<int>(p.transA ? p.M : p.K), Y,
                static_cast<int>(p.N), bf16, bf16Result, p.transB, p.transA});
  if (p.scratch)
    check(cudaMemcpyAsync(p.out.data, Y, yBytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
}

} // namespace
} // namespace hspmd::runtime::gpu
