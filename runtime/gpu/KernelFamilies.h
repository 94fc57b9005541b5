// KernelFamilies.h - the families of CUDA kernels behind gpu::runKernel (runtime/gpu/*.cu),
// for Kernels.cu's dispatch only. Each returns false for names it does not own.
#pragma once

#include "runtime/gpu/GpuKernels.h"
#include "runtime/gpu/Launch.h"

#include <cuda_runtime.h>

namespace hspmd::runtime::gpu {

using In = std::span<const TensorView>;

/// reshape, transpose, unbind, split, concat, slice, pad, sum, mean (runtime/gpu/LayoutKernels.cu).
bool layoutKernel(const std::string &op, const ir::AttrMap &attrs, In in, In out, cudaStream_t stream);
/// attention, attention_grad (runtime/gpu/AttentionKernels.cu).
bool attentionKernel(const std::string &op, const ir::AttrMap &attrs, In in, In out, const KernelContext &context,
                     cudaStream_t stream);
/// Copies (or, with `add`, adds: f32 only) the strided elements of `copy`.
void stridedCopy(const void *src, void *dst, int elementBytes, const StridedCopy &copy, bool add, cudaStream_t stream);

void check(cudaError_t status, const char *what);

} // namespace hspmd::runtime::gpu
