// Dispatch.cuh - runKernel's dispatch on a GPU (runtime/gpu/GpuKernels.h): an op's kernel from
// the kernel table, or the product, with bf16 tensors widened to f32 around the kernels that do
// not take them and their results rounded back. Kernels.cu gives it cuBLAS's products; the
// tests (tests/unit/support/EmulatedGpu.cpp) a reference GEMM, on CPU threads
// (runtime/gpu/Emulation.h).
#pragma once

#include "runtime/Kernels.h"
#include "runtime/gpu/ElementwiseKernels.cuh"
#include "runtime/gpu/Emulation.h"
#include "runtime/gpu/KernelSupport.cuh"
#include "runtime/gpu/KernelTable.cuh"
#include "runtime/gpu/Launch.h"

#include <algorithm>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace hspmd::runtime::gpu {

namespace {

/// Whether `op` takes these bf16 tensors as they are; the others run on widened copies. Products
/// (bf16 on tensor cores), the elementwise kernels and the norms (they read and write bf16,
/// computing in f32 or double: bit for bit the widened kernel's rounded result), softmax,
/// cross-entropy and the embedding likewise (rowKernelTakes), attention on tensor cores where it
/// takes the heads (tensorAttentionTakes), and layout ops
/// that only move elements, where every tensor has one type (a bf16 copied is a bf16 widened,
/// copied and rounded back).
inline bool readsBf16(const std::string &op, std::span<const TensorView> inputs, std::span<const TensorView> outputs) {
  static const std::set<std::string> elementwise = {"add",       "sub",       "mul",     "div",       "neg",
                                                    "gelu",      "silu",      "relu",    "gelu_grad", "silu_grad",
                                                    "relu_grad", "broadcast", "constant"},
                                     moves = {"reshape", "transpose", "unbind", "split", "concat", "slice", "pad"};
  if (op == "matmul" || elementwise.count(op))
    return true;
  if (op == "layernorm" || op == "rmsnorm" || op == "layernorm_grad" || op == "rmsnorm_grad")
    return normTakes(op, inputs, outputs);
  if (op == "attention" || op == "attention_grad")
    return tensorAttentionTakes(op, inputs, outputs);
  if (rowKernelTakes(op, inputs, outputs))
    return true;
  if (!moves.count(op))
    return false;
  auto same = [&](const TensorView &t) { return t.dtype == (inputs.empty() ? outputs[0] : inputs[0]).dtype; };
  return std::all_of(inputs.begin(), inputs.end(), same) && std::all_of(outputs.begin(), outputs.end(), same);
}

// bf16 storage: widened to f32 for a kernel, its results rounded back (runtime/Bf16.h's rounding).
HSPMD_KERNEL void widenKernel(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = floatOfBits(static_cast<uint32_t>(in[i]) << 16);
}

HSPMD_KERNEL void narrowKernel(const float *in, uint16_t *out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = bf16BitsOf(in[i]);
}

/// The ops dispatchKernel runs: the kernel table's and the product.
inline std::vector<std::string> dispatchedKernelNames() {
  std::vector<std::string> names;
  for (const auto &[name, _] : kernelTable())
    names.push_back(name);
  names.push_back("matmul");
  return names;
}

/// runKernel: `op` on `stream` on tensors in device memory; products through `matmul(in, out)`.
template <typename Matmul>
void dispatchKernel(const std::string &op, const ir::AttrMap &attrs, In inputs, In outputs,
                    const KernelContext &context, cudaStream_t stream, const Matmul &matmul) {
  // bf16 tensors: the kernel runs in f32 on widened copies (outputs too: a kernel may add to
  // what its output holds), and what it wrote is rounded back; the copies are freed in stream
  // order. Kernels that take bf16 (readsBf16) are the exception.
  auto bf16 = [](const TensorView &t) { return t.dtype == ir::DType::BF16; };
  if (!readsBf16(op, inputs, outputs) &&
      (std::any_of(inputs.begin(), inputs.end(), bf16) || std::any_of(outputs.begin(), outputs.end(), bf16))) {
    std::vector<std::unique_ptr<Scratch>> wide;
    auto widened = [&](In views) {
      std::vector<TensorView> out(views.begin(), views.end());
      for (TensorView &t : out)
        if (bf16(t)) {
          const int64_t n = t.numel();
          wide.push_back(std::make_unique<Scratch>(std::max<int64_t>(n, 1) * 4, stream));
          if (const LaunchShape shape = elementwiseLaunch(n); shape.blocks)
            launchKernel(shape.blocks, shape.threads, 0, stream, widenKernel, static_cast<const uint16_t *>(t.data),
                         wide.back()->as<float>(), n);
          t = TensorView{wide.back()->as<float>(), ir::DType::F32, t.shape};
        }
      return out;
    };
    const std::vector<TensorView> in = widened(inputs), out = widened(outputs);
    dispatchKernel(op, attrs, in, out, context, stream, matmul);
    for (size_t i = 0; i < outputs.size(); ++i)
      if (const LaunchShape shape = elementwiseLaunch(outputs[i].numel()); bf16(outputs[i]) && shape.blocks)
        launchKernel(shape.blocks, shape.threads, 0, stream, narrowKernel, out[i].f32(),
                     static_cast<uint16_t *>(outputs[i].data), outputs[i].numel());
    check(cudaGetLastError(), op.c_str());
    return;
  }
  for (const TensorView &t : inputs)
    expect(t.dtype == ir::DType::F32 || t.dtype == ir::DType::I32 || (bf16(t) && readsBf16(op, inputs, outputs)), op,
           "the GPU kernels take f32 and i32 tensors");
  if (op == "matmul")
    matmul(inputs, outputs);
  else if (auto it = kernelTable().find(op); it != kernelTable().end())
    it->second(attrs, inputs, outputs, context, stream);
  else
    throw KernelError("no GPU kernel for '" + op + "' yet (docs/gpu.md)");
  check(cudaGetLastError(), op.c_str());
}

} // namespace
} // namespace hspmd::runtime::gpu
