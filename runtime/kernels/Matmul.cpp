// matmul: [..., M, K] @ [..., K, N] -> [..., M, N] with numpy broadcasting of the batch
// dimensions, through OpenBLAS's cblas_sgemm (one call when the right operand is a matrix).
#include "runtime/Kernels.h"

#include <cblas.h>

#include <algorithm>

namespace hspmd::runtime::kernels {

bool matmul(const std::string &op, const ir::AttrMap &, In in, In out) {
  if (op != "matmul")
    return false;
  const TensorView &a = in[0], &b = in[1], &y = out[0];
  expect(a.shape.size() >= 2 && b.shape.size() >= 2, op, "operands need at least 2 dimensions");
  const int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
  expect(b.shape[b.shape.size() - 2] == K && y.shape.back() == N, op, "shapes do not fit");
  if (M * N == 0)
    return true;
  if (K == 0) { // an empty contraction (a device holding none of it): zeros
    std::fill(y.f32(), y.f32() + y.numel(), 0.0f);
    return true;
  }
  if (b.shape.size() == 2) { // every row of a against one matrix
    const int64_t rows = a.numel() / K;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows), static_cast<int>(N),
                static_cast<int>(K), 1.0f, a.f32(), static_cast<int>(K), b.f32(), static_cast<int>(N), 0.0f, y.f32(),
                static_cast<int>(N));
    return true;
  }
  // Batched: one product per batch index of the result, its operands found by broadcasting.
  const std::vector<int64_t> batch(y.shape.begin(), y.shape.end() - 2);
  const std::vector<int64_t> aBatch(a.shape.begin(), a.shape.end() - 2), bBatch(b.shape.begin(), b.shape.end() - 2);
  const auto aStrides = broadcastStrides(aBatch, batch), bStrides = broadcastStrides(bBatch, batch);
  int64_t count = 1;
  for (int64_t d : batch)
    count *= d;
  std::vector<int64_t> index(batch.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < batch.size(); ++d) {
      ia += index[d] * aStrides[d];
      ib += index[d] * bStrides[d];
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(M), static_cast<int>(N),
                static_cast<int>(K), 1.0f, a.f32() + ia * M * K, static_cast<int>(K), b.f32() + ib * K * N,
                static_cast<int>(N), 0.0f, y.f32() + i * M * N, static_cast<int>(N));
    for (size_t d = batch.size(); d-- > 0;) {
      if (++index[d] < batch[d])
        break;
      index[d] = 0;
    }
  }
  return true;
}

} // namespace hspmd::runtime::kernels
