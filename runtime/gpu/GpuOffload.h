// GpuOffload.h - a device's program on a GPU (runtime/Offload.h): the program's arena as one
// GPU allocation (the memory plan's offsets), every kernel and copy through runtime/gpu/'s
// CUDA kernels on one stream, in the order the executor runs them; the executor's arena is
// the host's staging area (parameters in, each micro-batch's inputs up, its loss down, the
// state down for a checkpoint, the buffers of each send, receive and collective down and up:
// communication goes through the host's communicator until the NCCL backend, docs/gpu.md).
//
// Which GPU: under mpirun the process's local rank (OMPI_COMM_WORLD_LOCAL_RANK), else the
// device's number, modulo the GPUs the process sees; devices of one process may share one.
#pragma once

#include "runtime/Offload.h"
#include "runtime/gpu/GpuKernels.h"

namespace hspmd::runtime::gpu {

class GpuOffload : public Offload {
public:
  /// Throws KernelError when no GPU can be used (CUDA's reason).
  explicit GpuOffload(const ir::DeviceProgram &program);
  void upload(int64_t offset, const char *from, int64_t bytes) override;
  void download(int64_t offset, char *to, int64_t bytes) override;
  void zero(int64_t offset, int64_t bytes) override;
  void execute(const ir::Instruction &in, int microbatch, const KernelContext &context) override;
  void run(const std::string &op, const ir::AttrMap &attrs, std::span<const TensorView> inputs,
           std::span<const TensorView> outputs, const KernelContext &context) override {
    useGpu(gpu_);
    runKernel(op, attrs, inputs, outputs, context, stream_);
  }
  void synchronize() override;
  std::string name() const override { return gpuName(gpu_); }
  char *memory() override { return static_cast<char *>(arena_.data()); }
  /// The stream its kernels run on, and its GPU (the NCCL backend's, runtime/gpu/GpuNccl.h).
  GpuStream &stream() { return stream_; }
  int gpu() const { return gpu_; }

private:
  const ir::DeviceProgram &program_;
  int gpu_; // the GPU's ordinal, made the calling thread's before each call
  GpuStream stream_;
  DeviceBuffer arena_;

  char *onGpu(int buffer, int microbatch) const;
};

/// RunOptions::offload for a run on the machine's GPUs (hspmc build --target cuda).
std::unique_ptr<Offload> gpuOffload(const OffloadSite &site);

} // namespace hspmd::runtime::gpu
