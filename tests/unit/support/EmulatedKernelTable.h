// EmulatedKernelTable.h - test support: runtime/gpu/KernelTable.cuh's table as the emulated GPU
// (EmulatedGpu.cpp) instantiated it.
#pragma once

#include "runtime/gpu/KernelTable.cuh"

#include <map>
#include <span>
#include <string>

namespace hspmd::testing {

/// KernelTable.cuh's kernelTable() of this test binary, the one runKernel dispatches to. The
/// table is in an unnamed namespace: a file that names it compiles all its launches again
/// (about 30 s with GCC 12 at -O2), so the tests name this one instance instead.
const std::map<std::string, runtime::gpu::Runner> &emulatedKernelTable();

/// Dispatch.cuh's readsBf16 as EmulatedGpu.cpp compiled it: whether the dispatch hands these
/// bf16 tensors to `op`'s kernel as they are (a file that includes Dispatch.cuh without calling
/// its dispatch would carry unused kernels, which clang's -Werror refuses).
bool emulatedReadsBf16(const std::string &op, std::span<const runtime::TensorView> inputs,
                       std::span<const runtime::TensorView> outputs);

} // namespace hspmd::testing
