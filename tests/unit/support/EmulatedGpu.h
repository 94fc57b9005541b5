// EmulatedGpu.h - test support: the settings of the emulated GPU (EmulatedGpu.cpp, which
// implements runtime/gpu/GpuKernels.h on CPU threads).
#pragma once

#include <atomic>
#include <cstdint>

namespace hspmd::testing {

/// The emulated GPU's memory in bytes: an allocation that would take the buffers alive past it
/// fails as cudaMalloc's does ("cudaMalloc: out of memory"), and gpuMemory() says what is
/// left free of it. 0: no limit.
inline std::atomic<int64_t> emulatedGpuMemory{0};

/// The bytes of the emulated GPU's buffers alive now.
int64_t emulatedGpuInUse();

} // namespace hspmd::testing
