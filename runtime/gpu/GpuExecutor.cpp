// GpuExecutor.cpp - a DeviceProgram on one GPU (runtime/gpu/GpuExecutor.h).
#include "runtime/gpu/GpuExecutor.h"
#include "runtime/Regions.h"

#include <cstring>

namespace hspmd::runtime::gpu {

namespace {

const ir::DeviceProgram &alone(const ir::DeviceProgram &program) {
  for (const ir::Instruction &in : program.body)
    if (in.kind == ir::InstrKind::Send || in.kind == ir::InstrKind::Recv || in.kind == ir::InstrKind::Collective ||
        !in.group.empty())
      throw KernelError("device " + std::to_string(program.device) + "'s program communicates (" + in.op +
                        "): on GPUs that needs the NCCL backend, which is not built yet (docs/gpu.md)");
  std::string why;
  if (!gpuAvailable(&why))
    throw KernelError("no GPU to run on (" + why + ")");
  return program;
}

} // namespace

GpuExecutor::GpuExecutor(const ir::DeviceProgram &program)
    : program_(alone(program)), world_(std::make_unique<ThreadsWorld>(std::vector<int>{program.device})),
      host_(program, world_->communicator(program.device)), arena_(std::max<int64_t>(program.peakBytes, 1)) {
  hostBase_ = program.buffers.empty() ? nullptr : host_.bufferData(0) - program.buffers[0].offset;
}

char *GpuExecutor::onGpu(int buffer, int microbatch) const {
  const ir::Buffer &b = program_.buffers[static_cast<size_t>(buffer)];
  return static_cast<char *>(arena_.data()) + b.offset + (microbatch % b.slots) * b.bytes();
}

void GpuExecutor::load(const ParameterStore &store) {
  host_.load(store);
  if (hostBase_)
    copyToGpu(arena_.data(), hostBase_, program_.peakBytes, stream_);
}

std::vector<char> GpuExecutor::packState() {
  if (hostBase_)
    copyToHost(hostBase_, arena_.data(), program_.peakBytes, stream_);
  return host_.packState();
}

double GpuExecutor::step(const Batch &batch, int64_t step) {
  host_.beginPasses(&batch, step);
  struct Done {
    DeviceExecutor &host;
    ~Done() { host.beginPasses(nullptr, host.stepsTaken()); }
  } done{host_};
  for (const ir::Buffer &b : program_.buffers)
    if (b.zeroed)
      zeroBytes(onGpu(b.id, 0), b.arenaBytes(), stream_);
  double loss = 0;
  for (const ir::ScheduleSlot &slot : program_.schedule) {
    if (static_cast<size_t>(slot.microbatch) < batch.skipMicrobatch.size() && batch.skipMicrobatch[slot.microbatch])
      continue;
    if (slot.phase == ir::Phase::Forward) {
      host_.loadInputs(batch, slot.microbatch);
      for (const ir::Buffer &b : program_.buffers)
        if (b.role == ir::BufferRole::Input)
          copyToGpu(onGpu(b.id, slot.microbatch), host_.bufferData(b.id) + (slot.microbatch % b.slots) * b.bytes(),
                    b.bytes(), stream_);
      run(ir::Phase::Forward, slot.microbatch);
      if (program_.lossBuffer >= 0) {
        float part = 0;
        copyToHost(&part, onGpu(program_.lossBuffer, slot.microbatch), sizeof part, stream_);
        loss += part;
      }
    } else {
      run(ir::Phase::Backward, slot.microbatch);
    }
  }
  run(ir::Phase::Update, 0);
  stream_.synchronize();
  host_.finishUpdate();
  return loss;
}

// The instructions of one pass in body order (recomputation in the backward pass), as the CPU
// executor runs them.
void GpuExecutor::run(ir::Phase pass, int microbatch) {
  for (const ir::Instruction &in : program_.body)
    if (ir::passOf(in.phase) == pass)
      execute(in, microbatch);
}

void GpuExecutor::execute(const ir::Instruction &in, int microbatch) {
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
    runKernel(in.op, in.attrs, inputs, outputs, host_.kernelContext(in, microbatch), stream_);
    return;
  }
  // Copies (the constructor let no communication through).
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

} // namespace hspmd::runtime::gpu
