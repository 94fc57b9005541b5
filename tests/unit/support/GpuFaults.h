// GpuFaults.h - test support: a bad input to a GPU kernel, run through runtime/gpu/GpuKernels.h
// (on a GPU in tests/gpu/GpuKernelTest.cpp, on CPU threads with tests/unit/support/EmulatedGpu.cpp
// in tests/unit/runtime/GpuEmulatedKernelsTest.cpp).
#pragma once

#include "runtime/Kernels.h"
#include "runtime/gpu/GpuKernels.h"
#include "tests/unit/support/KernelCases.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

namespace hspmd::testing {

/// A cross-entropy target outside the vocabulary (the data loader lets none through; this is
/// the second line) fails the run with the CPU kernel's message, at the stream's next
/// synchronize: the kernel records it in the stream's fault word, and the host does not wait
/// for the kernel. The word is cleared then: the stream goes on.
inline void badTargetsFailAtTheNextSynchronize() {
  std::mt19937 random(8);
  for (const std::string op : {"cross_entropy", "cross_entropy_grad"}) {
    SCOPED_TRACE(op);
    const bool grad = op == "cross_entropy_grad";
    std::vector<KernelTensor> in{f32({2, 10}, random), i32({2}, {3, 10})};
    if (grad)
      in.push_back(f32({}, random));
    std::vector<KernelTensor> out{zeros(grad ? std::vector<int64_t>{2, 10} : std::vector<int64_t>{})};
    const ir::AttrMap attrs{{"tokens", int64_t{2}}};
    std::string cpu, gpu;
    try {
      runtime::runKernel(op, attrs, views(in), views(out), {});
    } catch (const runtime::KernelError &e) {
      cpu = e.what();
    }
    ASSERT_NE(cpu, "");

    runtime::gpu::GpuStream stream;
    std::vector<std::unique_ptr<runtime::gpu::DeviceBuffer>> memory;
    auto upload = [&](std::vector<KernelTensor> &tensors) {
      std::vector<runtime::TensorView> on;
      for (KernelTensor &t : tensors) {
        memory.push_back(std::make_unique<runtime::gpu::DeviceBuffer>(static_cast<int64_t>(t.bytes.size())));
        memory.back()->upload(t.bytes.data(), static_cast<int64_t>(t.bytes.size()));
        on.push_back(runtime::TensorView{memory.back()->data(), t.dtype, t.shape});
      }
      return on;
    };
    const std::vector<runtime::TensorView> gpuIn = upload(in), gpuOut = upload(out);
    EXPECT_NO_THROW(runtime::gpu::runKernel(op, attrs, gpuIn, gpuOut, {}, stream));
    try {
      stream.synchronize();
    } catch (const runtime::KernelError &e) {
      gpu = e.what();
    }
    EXPECT_EQ(gpu, cpu);
    EXPECT_NO_THROW(stream.synchronize());
  }
}

} // namespace hspmd::testing
