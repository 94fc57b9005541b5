// ReferenceGemm.h - test support: cuBLAS's sgemm and gemmEx as their documentation states them,
// for the GPU code run on CPU threads (runtime/gpu/MatmulKernels.cuh's matmulWith): alpha 1, beta
// 0, column-major C (m x n) = op(A) (m x k) op(B) (k x n), element (i, j) of X at X[i + j * ldX],
// op(X) X or (transX) X^T; bf16 operands widened, sums in double, a bf16 result rounded to the
// nearest.
#pragma once

#include "runtime/Bf16.h"
#include "runtime/gpu/MatmulKernels.cuh"

#include <cstdint>

namespace hspmd::testing {

struct ReferenceGemm {
  int *calls = nullptr; // counts the products, where given
  void operator()(const runtime::gpu::GemmArgs &g) const {
    if (calls)
      ++*calls;
    auto at = [&](const void *x, int64_t index) {
      return g.bf16Operands ? runtime::fromBf16(static_cast<const uint16_t *>(x)[index])
                            : static_cast<const float *>(x)[index];
    };
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        double sum = 0;
        for (int64_t p = 0; p < g.k; ++p)
          sum += static_cast<double>(at(g.A, g.transA ? p + i * g.lda : i + p * g.lda)) *
                 at(g.B, g.transB ? j + p * g.ldb : p + j * g.ldb);
        if (g.bf16Result)
          static_cast<uint16_t *>(g.C)[i + j * g.ldc] = runtime::toBf16(static_cast<float>(sum));
        else
          static_cast<float *>(g.C)[i + j * g.ldc] = static_cast<float>(sum);
      }
  }
};

} // namespace hspmd::testing
