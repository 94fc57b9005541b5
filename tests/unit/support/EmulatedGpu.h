// EmulatedGpu.h - test support: the settings of the emulated GPU (EmulatedGpu.cpp, which
// implements runtime/gpu/GpuKernels.h on CPU threads).
#pragma once

#include <atomic>
#include <cstdint>

namespace hspmd::testing {

/// The emulated GPU's memory in bytes: an allocation larger than this fails as cudaMalloc's
/// does ("cudaMalloc: out of memory"), and gpuMemory() says it is all free. 0: no limit.
inline std::atomic<int64_t> emulatedGpuMemory{0};

} // namespace hspmd::testing
