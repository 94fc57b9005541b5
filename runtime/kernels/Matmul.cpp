// matmul: [..., M, K] @ [..., K, N] -> [..., M, N] with numpy broadcasting of the batch
// dimensions, through OpenBLAS's cblas_sgemm (one call when the right operand is a matrix).
// OpenBLAS runs single-threaded; the kernel splits a product over the pool's threads by rows
// of the result (or columns, when it has few rows), and a batch by its products. The parts
// depend on the product's shape and the machine's cores, never on the threads a run gives its
// kernels (Parallel.h): OpenBLAS picks its kernel, and with it the order of each element's
// additions, by the shape of each call (on an AVX-512 EPYC, 700 x 96 x 200 split in 3 parts
// gave other bits than in 1), so one thread runs the same calls as three.
#include "runtime/Kernels.h"
#include "runtime/kernels/Parallel.h"

#include <cblas.h>

#include <algorithm>
#include <thread>

namespace hspmd::runtime::kernels {

namespace {

// Below this many multiply-adds a product is one call: splitting it would cost more than it
// saves. Above it, in two parts or more of at least kPartWork each (and 16 rows or columns),
// at most one per core of the machine: each call packs its operands again, so parts beyond
// the cores only cost (on 2 cores, 1024 x 512 x 512 ran at 250 GFLOP/s in 2 parts, 242 in 8,
// 228 in 12; on one thread 132 in 1 part, 129 in 2, 123 in 8).
constexpr int64_t kSplitWork = 1 << 20;
constexpr int64_t kPartWork = 1 << 21;

// The machine's cores (not the threads a run gives its kernels, which change with the devices
// in a process): the split, and so the bits, are those of any run on this machine.
int64_t machineCores() {
  static const int64_t cores = std::max(2u, std::thread::hardware_concurrency());
  return cores;
}

} // namespace

void sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *a, int64_t lda,
           const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  auto call = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                static_cast<int>(m1 - m0), static_cast<int>(n1 - n0), static_cast<int>(K), alpha,
                a + (transA ? m0 : m0 * lda), static_cast<int>(lda), b + (transB ? n0 * ldb : n0),
                static_cast<int>(ldb), beta, c + m0 * ldc + n0, static_cast<int>(ldc));
  };
  const int64_t work = M * N * K;
  const int64_t parts = work < kSplitWork ? 1 : std::clamp<int64_t>(work / kPartWork, 2, machineCores());
  if (parts <= 1) {
    call(0, M, 0, N);
    return;
  }
  if (M >= 16 * parts || M >= N) {
    const int64_t rows = std::max<int64_t>(16, (M + parts - 1) / parts);
    parallelFor(M, rows, [&](int64_t m0, int64_t m1) { call(m0, m1, 0, N); });
  } else {
    const int64_t cols = std::max<int64_t>(16, (N + parts - 1) / parts);
    parallelFor(N, cols, [&](int64_t n0, int64_t n1) { call(0, M, n0, n1); });
  }
}

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
    sgemm(false, false, a.numel() / K, N, K, 1.0f, a.f32(), K, b.f32(), N, 0.0f, y.f32(), N);
    return true;
  }
  // Batched: one product per batch index of the result, its operands found by broadcasting.
  const std::vector<int64_t> batch(y.shape.begin(), y.shape.end() - 2);
  const std::vector<int64_t> aBatch(a.shape.begin(), a.shape.end() - 2), bBatch(b.shape.begin(), b.shape.end() - 2);
  const auto aStrides = broadcastStrides(aBatch, batch), bStrides = broadcastStrides(bBatch, batch);
  int64_t count = 1;
  for (int64_t d : batch)
    count *= d;
  parallelFor(count, 1, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      int64_t ia = 0, ib = 0;
      for (size_t d = batch.size(), rest = static_cast<size_t>(i); d-- > 0;) {
        const auto at = static_cast<int64_t>(rest % static_cast<size_t>(batch[d]));
        rest /= static_cast<size_t>(batch[d]);
        ia += at * aStrides[d];
        ib += at * bStrides[d];
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(M), static_cast<int>(N),
                  static_cast<int>(K), 1.0f, a.f32() + ia * M * K, static_cast<int>(K), b.f32() + ib * K * N,
                  static_cast<int>(N), 0.0f, y.f32() + i * M * N, static_cast<int>(N));
    }
  });
  return true;
}

} // namespace hspmd::runtime::kernels
