// GpuExecutor.h - runs one device's DeviceProgram on a GPU: the program's arena as one GPU
// allocation (the memory plan's offsets), every kernel and copy through runtime/gpu/'s CUDA
// kernels on one stream, in the order the CPU executor runs them. The host's side (parameters
// in, inputs of each micro-batch, the state out) is a CPU DeviceExecutor's, copied across.
//
// Single-device programs only, for now: a program that sends, receives or joins a collective
// needs the NCCL backend (docs/gpu.md), and the constructor says so.
#pragma once

#include "runtime/Executor.h"
#include "runtime/gpu/GpuKernels.h"

#include <memory>

namespace hspmd::runtime::gpu {

class GpuExecutor {
public:
  /// Throws KernelError when the program communicates, or no GPU can be used.
  explicit GpuExecutor(const ir::DeviceProgram &program);
  void load(const ParameterStore &store);
  /// One training step (optimizer step `step`, from 1); returns the device's part of the loss.
  double step(const Batch &batch, int64_t step);
  /// The parameters and optimizer state, packed as DeviceExecutor::packState packs them.
  std::vector<char> packState();

private:
  const ir::DeviceProgram &program_;
  std::unique_ptr<World> world_; // the host executor's (it never communicates)
  DeviceExecutor host_;
  GpuStream stream_;
  DeviceBuffer arena_;
  char *hostBase_; // the host executor's arena (its buffer 0 less that buffer's offset)

  char *onGpu(int buffer, int microbatch) const;
  void run(ir::Phase pass, int microbatch);
  void execute(const ir::Instruction &in, int microbatch);
};

} // namespace hspmd::runtime::gpu
