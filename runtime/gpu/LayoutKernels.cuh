// LayoutKernels.cuh - reshape, transpose, unbind/split/concat, slice/pad as strided copies
// (runtime/gpu/Launch.h computes their strides on the host), and sum/mean with one thread per
// result element adding its terms in order, in double (runtime/kernels/Layout.cpp's contract).
// Part of KernelTable.cuh (which includes it), and so also run on CPU threads by the tests.
#pragma once

#include "runtime/Kernels.h"
#include "runtime/gpu/ElementwiseKernels.cuh"
#include "runtime/gpu/Emulation.h"
#include "runtime/gpu/KernelSupport.cuh"
#include "runtime/gpu/Launch.h"

#include <span>
#include <string>
#include <vector>

namespace hspmd::runtime::gpu {

namespace {

void stridedCopy(const void *src, void *dst, int elementBytes, const StridedCopy &copy, bool add, cudaStream_t stream);

int elementBytes(const TensorView &t) {
  return ir::dtypeBytes(t.dtype);
}

template <typename T> HSPMD_KERNEL void stridedCopyKernel(const T *src, T *dst, StridedCopy c, bool add) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < c.count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = i, from = c.srcBase, to = c.dstBase;
    for (int d = c.rank - 1; d >= 0; --d) {
      const int64_t at = rest % c.size[d];
      rest /= c.size[d];
      from += at * c.src[d];
      to += at * c.dst[d];
    }
    if constexpr (sizeof(T) == 4) {
      if (add) {
        dst[to] = bitsOfFloat(floatOfBits(dst[to]) + floatOfBits(src[from]));
        continue;
      }
    }
    if constexpr (sizeof(T) == 2) { // bf16: added in float, rounded (runtime::copyBox)
      if (add) {
        dst[to] = bf16BitsOf(floatOfBits(static_cast<uint32_t>(dst[to]) << 16) +
                             floatOfBits(static_cast<uint32_t>(src[from]) << 16));
        continue;
      }
    }
    dst[to] = src[from];
  }
}

HSPMD_KERNEL void reduceKernel(const float *x, float *y, Reduction r, double scale) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < r.results;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = j, base = 0;
    for (int d = r.keptRank - 1; d >= 0; --d) {
      base += rest % r.keptSize[d] * r.keptStride[d];
      rest /= r.keptSize[d];
    }
    double sum = 0;
    for (int64_t t = 0; t < r.terms; ++t) {
      int64_t at = base;
      rest = t;
      for (int d = r.reducedRank - 1; d >= 0; --d) {
        at += rest % r.reducedSize[d] * r.reducedStride[d];
        rest /= r.reducedSize[d];
      }
      sum += x[at];
    }
    y[j] = static_cast<float>(sum * scale);
  }
}

// `part` into (concat, pad) or out of (split, unbind) `whole` at `offset` along `dim`.
void along(const TensorView &whole, const TensorView &part, size_t dim, int64_t offset, bool intoWhole,
           cudaStream_t stream) {
  std::vector<int64_t> lo(whole.shape.size(), 0), zero(part.shape.size(), 0);
  lo[dim] = offset;
  if (intoWhole)
    stridedCopy(part.data, whole.data, elementBytes(part), boxCopy(part.shape, zero, whole.shape, lo, part.shape),
                false, stream);
  else
    stridedCopy(whole.data, part.data, elementBytes(part), boxCopy(whole.shape, lo, part.shape, zero, part.shape),
                false, stream);
}

void stridedCopy(const void *src, void *dst, int elementBytes, const StridedCopy &copy, bool add, cudaStream_t stream) {
  const LaunchShape shape = elementwiseLaunch(copy.count);
  if (!shape.blocks)
    return;
  switch (elementBytes) {
  case 2:
    launchKernel(shape.blocks, shape.threads, 0, stream, stridedCopyKernel<uint16_t>,
                 static_cast<const uint16_t *>(src), static_cast<uint16_t *>(dst), copy, add);
    break;
  case 4:
    launchKernel(shape.blocks, shape.threads, 0, stream, stridedCopyKernel<uint32_t>,
                 static_cast<const uint32_t *>(src), static_cast<uint32_t *>(dst), copy, add);
    break;
  case 8:
    launchKernel(shape.blocks, shape.threads, 0, stream, stridedCopyKernel<uint64_t>,
                 static_cast<const uint64_t *>(src), static_cast<uint64_t *>(dst), copy, false);
    break;
  default:
    throw KernelError("no strided copy of " + std::to_string(elementBytes) + "-byte elements");
  }
}

/// reshape, transpose, unbind, split, concat, slice, pad, sum, mean; false for other ops.
bool layoutKernel(const std::string &op, const ir::AttrMap &attrs, std::span<const TensorView> in,
                  std::span<const TensorView> out, cudaStream_t stream) {
  if (op == "reshape") {
    kernels::expect(in[0].numel() == out[0].numel(), op, "element counts differ");
    if (in[0].data != out[0].data)
      check(cudaMemcpyAsync(out[0].data, in[0].data, static_cast<size_t>(in[0].numel() * elementBytes(in[0])),
                            cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpyAsync");
  } else if (op == "transpose") {
    stridedCopy(in[0].data, out[0].data, elementBytes(in[0]),
                transposeCopy(in[0].shape, static_cast<size_t>(ir::intAttr(attrs, "dim0")),
                              static_cast<size_t>(ir::intAttr(attrs, "dim1"))),
                false, stream);
  } else if (op == "unbind" || op == "split") {
    const auto dim = static_cast<size_t>(ir::intAttr(attrs, "dim"));
    for (const kernels::PartAlong &part : kernels::partsAlong(op == "unbind", dim, out))
      along(in[0], part.view, dim, part.offset, false, stream);
  } else if (op == "concat") {
    const auto dim = static_cast<size_t>(ir::intAttr(attrs, "dim"));
    for (const kernels::PartAlong &part : kernels::partsAlong(false, dim, in))
      along(out[0], part.view, dim, part.offset, true, stream);
  } else if (op == "slice") {
    const auto dim = static_cast<size_t>(ir::intAttr(attrs, "dim"));
    std::vector<int64_t> lo(in[0].shape.size(), 0), zero(lo);
    lo[dim] = ir::intAttr(attrs, "start");
    stridedCopy(in[0].data, out[0].data, elementBytes(in[0]),
                boxCopy(in[0].shape, lo, out[0].shape, zero, out[0].shape), false, stream);
  } else if (op == "pad") {
    check(cudaMemsetAsync(out[0].data, 0, static_cast<size_t>(out[0].numel() * elementBytes(out[0])), stream),
          "cudaMemsetAsync");
    along(out[0], in[0], static_cast<size_t>(ir::intAttr(attrs, "dim")), ir::intAttr(attrs, "before"), true, stream);
  } else if (op == "sum" || op == "mean") {
    const auto dims = ir::listAttr(attrs, "dims");
    std::vector<bool> reduced(in[0].shape.size(), dims.empty());
    for (const auto &d : dims)
      reduced.at(static_cast<size_t>(d.constant().value_or(0))) = true;
    const Reduction r = reduction(in[0].shape, reduced);
    const double scale = op == "mean" && r.terms > 0 ? 1.0 / static_cast<double>(r.terms) : 1.0;
    const LaunchShape shape = elementwiseLaunch(r.results);
    if (shape.blocks)
      launchKernel(shape.blocks, shape.threads, 0, stream, reduceKernel, in[0].f32(), out[0].f32(), r, scale);
  } else {
    return false;
  }
  return true;
}

} // namespace
} // namespace hspmd::runtime::gpu
