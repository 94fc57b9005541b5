// GpuOffload.cpp - a DeviceProgram's kernels and copies on one GPU (runtime/gpu/GpuOffload.h).
#include "runtime/gpu/GpuOffload.h"
#include "runtime/Regions.h"

#include <algorithm>
#include <cstdlib>

namespace hspmd::runtime::gpu {

namespace {

// The GPU of `program`'s device (GpuOffload.h), made the calling thread's.
int gpuOf(const ir::DeviceProgram &program) {
  std::string why;
  if (!gpuAvailable(&why))
    throw KernelError("no GPU to run on (" + why + ")");
  const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  const int index = local ? std::atoi(local) : program.device;
  const int gpu = std::max(index, 0) % gpuCount();
  useGpu(gpu);
  return gpu;
}

} // namespace

GpuOffload::GpuOffload(const ir::DeviceProgram &program)
    : program_(program), gpu_(gpuOf(program)), arena_(std::max<int64_t>(offloadBytes(program), 1)) {}

char *GpuOffload::onGpu(int buffer, int microbatch) const {
  const ir::Buffer &b = program_.buffers[static_cast<size_t>(buffer)];
  return static_cast<char *>(arena_.data()) + b.offset + (microbatch % b.slots) * b.bytes();
}

void GpuOffload::upload(int64_t offset, const char *from, int64_t bytes) {
  useGpu(gpu_);
  copyToGpu(static_cast<char *>(arena_.data()) + offset, from, bytes, stream_);
}

void GpuOffload::download(int64_t offset, char *to, int64_t bytes) {
  useGpu(gpu_);
  copyToHost(to, static_cast<char *>(arena_.data()) + offset, bytes, stream_);
}

void GpuOffload::zero(int64_t offset, int64_t bytes) {
  useGpu(gpu_);
  zeroBytes(static_cast<char *>(arena_.data()) + offset, bytes, stream_);
}

void GpuOffload::synchronize() {
  useGpu(gpu_);
  stream_.synchronize();
}

void GpuOffload::execute(const ir::Instruction &in, int microbatch, const KernelContext &context) {
  useGpu(gpu_);
  auto view = [&](int buffer) {
    const ir::Buffer &b = program_.buffers[static_cast<size_t>(buffer)];
    return TensorView{onGpu(buffer, microbatch), b.dtype, b.shape};
  };
  if (in.kind == ir::InstrKind::Kernel) {
    std::vector<TensorView> inputs, outputs;
    for (int b : in.inputs)
      inputs.push_back(view(b));
    for (int b : in.outputs)
      outputs.push_back(view(b));
    runKernel(in.op, in.attrs, inputs, outputs, context, stream_);
    return;
  }
  // Copies (the executor runs communication on the host).
  const ir::Buffer &to = program_.buffers[static_cast<size_t>(in.outputs.at(0))];
  if (in.op == "zero") {
    zeroBytes(onGpu(to.id, microbatch), to.bytes(), stream_);
    return;
  }
  const ir::Buffer &from = program_.buffers[static_cast<size_t>(in.inputs.at(0))];
  for (const ir::Box &box : in.slices)
    copyBox(ir::dtypeBytes(from.dtype), onGpu(from.id, microbatch), from.shape, minus(box.lo, from.origin),
            onGpu(to.id, microbatch), to.shape, minus(box.lo, to.origin), minus(box.hi, box.lo), in.op == "copy-add",
            stream_);
}

std::unique_ptr<Offload> gpuOffload(const OffloadSite &site) {
  return std::make_unique<GpuOffload>(site.program);
}

} // namespace hspmd::runtime::gpu
