// GpuOffload.cpp - a DeviceProgram's kernels and copies on one GPU (runtime/gpu/GpuOffload.h).
#include "runtime/gpu/GpuOffload.h"
#include "runtime/Regions.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

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

// `program`'s arena (its memory plan's offsets) in one allocation on GPU `gpu`.
DeviceBuffer arenaOf(const ir::DeviceProgram &program, int gpu) {
  const int64_t bytes = std::max<int64_t>(offloadBytes(program), 1);
  try {
    return DeviceBuffer(bytes);
  } catch (const KernelError &e) {
    const auto [free, total] = gpuMemory();
    throw KernelError(arenaDoesNotFit(program.device, bytes, gpu, gpuName(gpu), free, total, e.what()));
  }
}

} // namespace

std::string arenaDoesNotFit(int device, int64_t bytes, int gpu, const std::string &name, int64_t free, int64_t total,
                            const std::string &why) {
  return "device " + std::to_string(device) + " needs " + ir::memoryText(bytes) +
         " of GPU memory (its memory plan's peak), and GPU " + std::to_string(gpu) + " (" + name + ") has " +
         ir::memoryText(free) + " free of " + ir::memoryText(total) + " (" + why +
         "); hspmc lint checks a plan's memory against its cluster file's device types (HS111)";
}

GpuOffload::GpuOffload(const ir::DeviceProgram &program)
    : program_(program), gpu_(gpuOf(program)), arena_(arenaOf(program, gpu_)) {
  fusion_ = fusionFor(program, /*bf16=*/true);
  if (const char *setting = std::getenv("HSPMD_GPU_PARAMETER_COPIES"); setting && std::string(setting) == "0")
    return;
  auto buffer = [&](int id) -> const ir::Buffer & { return program.buffers[static_cast<size_t>(id)]; };
  for (int id : bf16ParameterCopies(program, fusion_))
    copies_[id];
  // Each copy allocated now, beside the arena, in buffer order, while the GPU keeps
  // kParameterCopyReserve free: those that do not fit are left out (their products round the
  // parameter each time, as without copies), and the run says so.
  const size_t wanted = copies_.size();
  int64_t leftOutBytes = 0;
  for (auto it = copies_.begin(); it != copies_.end();) {
    const int64_t bytes = buffer(it->first).bytes() / 2; // f32 -> bf16
    const auto [free, total] = gpuMemory();              // (total 0: not known)
    if (total == 0 || free - bytes >= kParameterCopyReserve)
      try {
        it->second.bf16 = std::make_unique<DeviceBuffer>(bytes);
        ++it;
        continue;
      } catch (const KernelError &) { // (no room after all: left out)
      }
    leftOutBytes += bytes;
    it = copies_.erase(it);
    ++copiesLeftOut_;
  }
  if (copiesLeftOut_ > 0)
    std::fprintf(stderr, "%s\n",
                 copiesDoNotFit(program.device, gpu_, copiesLeftOut_, static_cast<int>(wanted), leftOutBytes).c_str());
  for (const auto &[id, copy] : copies_)
    copiedAt_[buffer(id).offset] = id;
}

std::string copiesDoNotFit(int device, int gpu, int leftOut, int wanted, int64_t bytes) {
  return "hspmd: warning: device " + std::to_string(device) + ": no room on GPU " + std::to_string(gpu) +
         " beside its arena for the bf16 copies of " + std::to_string(leftOut) + " of the " + std::to_string(wanted) +
         " parameters its bf16 products read (" + ir::memoryText(static_cast<double>(bytes)) +
         "): those products round the parameter each time they read it (slower, the same results; docs/gpu.md)";
}

void GpuOffload::wrote(int64_t begin, int64_t end) {
  // The copied parameters are disjoint, so their ends grow with their offsets: those before
  // `end` that end after `begin`.
  for (auto at = copiedAt_.lower_bound(end); at != copiedAt_.begin();) {
    --at;
    const ir::Buffer &b = program_.buffers[static_cast<size_t>(at->second)];
    if (b.offset + b.bytes() <= begin)
      break;
    copies_.at(at->second).current = false;
  }
}

void GpuOffload::wroteOutputs(const ir::Instruction &in) {
  for (int id : in.outputs) {
    const ir::Buffer &b = program_.buffers[static_cast<size_t>(id)];
    wrote(b.offset, b.offset + b.arenaBytes());
  }
}

void GpuOffload::beginStep(const std::vector<unsigned char> &) {
  for (auto &[id, copy] : copies_)
    copy.current = false;
  startsFrom_ = nullptr; // a new step's batch
}

KernelContext GpuOffload::withStartsOnGpu(const KernelContext &context) {
  if (!context.blockStarts || context.blockStartsOnGpu)
    return context;
  if (startsFrom_ != context.blockStarts) {
    const int64_t bytes = context.batchRows * context.seq * static_cast<int64_t>(sizeof(int32_t));
    if (bytes > startsBytes_) {
      starts_ = std::make_unique<DeviceBuffer>(bytes);
      startsBytes_ = bytes;
    }
    copyToGpu(starts_->data(), context.blockStarts, bytes, stream_);
    startsFrom_ = context.blockStarts;
  }
  KernelContext there = context;
  there.blockStarts = static_cast<const int32_t *>(starts_->data());
  there.blockStartsOnGpu = true;
  return there;
}

void GpuOffload::changed(const ir::Instruction &in) {
  wroteOutputs(in);
}

TensorView GpuOffload::operandOf(const ir::Instruction &in, int buffer, TensorView view) {
  const auto found = copies_.find(buffer);
  if (found == copies_.end() || in.op != "matmul")
    return view;
  ParameterCopy &copy = found->second;
  if (!copy.current) {
    roundToBf16(static_cast<const float *>(view.data), copy.bf16->data(), view.numel(), stream_);
    copy.current = true;
    ++copiesMade_;
  }
  return TensorView{copy.bf16->data(), ir::DType::BF16, view.shape};
}

char *GpuOffload::onGpu(int buffer, int microbatch) const {
  const ir::Buffer &b = program_.buffers[static_cast<size_t>(buffer)];
  return static_cast<char *>(arena_.data()) + b.offset + (microbatch % b.slots) * b.bytes();
}

void GpuOffload::upload(int64_t offset, const char *from, int64_t bytes) {
  useGpu(gpu_);
  wrote(offset, offset + bytes);
  copyToGpu(static_cast<char *>(arena_.data()) + offset, from, bytes, stream_);
}

void GpuOffload::download(int64_t offset, char *to, int64_t bytes) {
  useGpu(gpu_);
  copyToHost(to, static_cast<char *>(arena_.data()) + offset, bytes, stream_);
}

void GpuOffload::zero(int64_t offset, int64_t bytes) {
  useGpu(gpu_);
  wrote(offset, offset + bytes);
  zeroBytes(static_cast<char *>(arena_.data()) + offset, bytes, stream_);
}

void GpuOffload::run(const std::string &op, const ir::AttrMap &attrs, std::span<const TensorView> inputs,
                     std::span<const TensorView> outputs, const KernelContext &context) {
  useGpu(gpu_);
  runKernel(op, attrs, inputs, outputs, context, stream_);
  // An output in the arena (by address: the cross-entropy's scratch lies past it) changed it.
  const auto base = reinterpret_cast<uintptr_t>(arena_.data());
  for (const TensorView &t : outputs)
    if (const auto at = reinterpret_cast<uintptr_t>(t.data);
        at >= base && at - base < uintptr_t(offloadBytes(program_)))
      wrote(static_cast<int64_t>(at - base), static_cast<int64_t>(at - base) + t.numel() * ir::dtypeBytes(t.dtype));
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
  // Its index in the body (the executor runs the program's own instructions).
  const auto first = reinterpret_cast<uintptr_t>(program_.body.data()), at = reinterpret_cast<uintptr_t>(&in);
  const size_t index = (at - first) / sizeof(ir::Instruction);
  const bool inBody = at >= first && index < program_.body.size() && &program_.body[index] == &in;
  if (inBody && fusion_.skipped[index])
    return; // folded into a fused product
  if (inBody && fusion_.matmuls[index]) {
    const FusedMatmul &f = *fusion_.matmuls[index];
    fusedMatmul(FusedProduct{operandOf(in, f.a, view(f.a)), operandOf(in, f.b, view(f.b)), view(f.out), f.transA,
                             f.transB, f.M, f.N, f.K, bf16Product(program_, index, fusion_), f.scratch},
                stream_);
    const ir::Buffer &out = program_.buffers[static_cast<size_t>(f.out)];
    wrote(out.offset, out.offset + out.arenaBytes());
    return;
  }
  if (in.kind == ir::InstrKind::Kernel) {
    std::vector<TensorView> inputs, outputs;
    for (int b : in.inputs)
      inputs.push_back(operandOf(in, b, view(b)));
    for (int b : in.outputs)
      outputs.push_back(view(b));
    runKernel(in.op, in.attrs, inputs, outputs, withStartsOnGpu(context), stream_);
    wroteOutputs(in);
    return;
  }
  wroteOutputs(in);
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
