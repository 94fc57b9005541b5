// Offload.cpp - the host arena's kernels and copies, and the offload of the tests
// (runtime/Offload.h).
#include "runtime/Offload.h"

#include "runtime/Regions.h"

#include <algorithm>
#include <cstring>

namespace hspmd::runtime {

void runInArena(const ir::DeviceProgram &program, char *base, const ir::Instruction &in, int microbatch,
                const KernelContext &context) {
  auto address = [&](int buffer) {
    const ir::Buffer &b = program.buffers[static_cast<size_t>(buffer)];
    return base + b.offset + (microbatch % b.slots) * b.bytes();
  };
  if (in.kind == ir::InstrKind::Kernel) {
    auto view = [&](int buffer) {
      const ir::Buffer &b = program.buffers[static_cast<size_t>(buffer)];
      return TensorView{address(buffer), b.dtype, b.shape};
    };
    std::vector<TensorView> inputs, outputs;
    for (int b : in.inputs)
      inputs.push_back(view(b));
    for (int b : in.outputs)
      outputs.push_back(view(b));
    runKernel(in.op, in.attrs, inputs, outputs, context);
    return;
  }
  if (in.kind != ir::InstrKind::Copy)
    throw KernelError("instruction '" + in.op + "' communicates: it does not run in one arena");
  const ir::Buffer &to = program.buffers[static_cast<size_t>(in.outputs.at(0))];
  if (in.op == "zero") {
    std::memset(address(to.id), 0, static_cast<size_t>(to.bytes()));
    return;
  }
  const ir::Buffer &from = program.buffers[static_cast<size_t>(in.inputs.at(0))];
  for (const ir::Box &box : in.slices)
    copyBox(ir::dtypeBytes(from.dtype), address(from.id), from.shape, minus(box.lo, from.origin), address(to.id),
            to.shape, minus(box.lo, to.origin), minus(box.hi, box.lo), in.op == "copy-add");
}

int64_t vocabParallelRows(const ir::DeviceProgram &program, const ir::Instruction &in) {
  const ir::Buffer &logits = program.buffers.at(static_cast<size_t>(in.inputs.at(0)));
  int64_t elements = 1;
  for (int64_t n : logits.shape)
    elements *= n;
  return elements / std::max<int64_t>(logits.shape.empty() ? 1 : logits.shape.back(), 1);
}

OffloadScratch offloadScratch(const ir::DeviceProgram &program, int64_t rows) {
  auto aligned = [](int64_t bytes) { return (std::max<int64_t>(bytes, 0) + 255) / 256 * 256; };
  OffloadScratch at;
  at.peaks = aligned(program.peakBytes);
  at.sums = at.peaks + aligned(rows * 4);
  at.end = at.sums + rows * 8;
  return at;
}

int64_t offloadBytes(const ir::DeviceProgram &program) {
  int64_t rows = 0;
  for (const ir::Instruction &in : program.body)
    if (in.kind == ir::InstrKind::Kernel && !in.group.empty())
      rows = std::max(rows, vocabParallelRows(program, in));
  return rows > 0 ? offloadScratch(program, rows).end : std::max<int64_t>(program.peakBytes, 0);
}

HostOffload::HostOffload(const ir::DeviceProgram &program)
    : program_(program), arena_(static_cast<size_t>(offloadBytes(program)) + 128) {
  base_ = arena_.data() + (64 - reinterpret_cast<uintptr_t>(arena_.data()) % 64) % 64;
}

void HostOffload::upload(int64_t offset, const char *from, int64_t bytes) {
  std::memcpy(base_ + offset, from, static_cast<size_t>(bytes));
}

void HostOffload::download(int64_t offset, char *to, int64_t bytes) {
  std::memcpy(to, base_ + offset, static_cast<size_t>(bytes));
}

void HostOffload::zero(int64_t offset, int64_t bytes) {
  std::memset(base_ + offset, 0, static_cast<size_t>(bytes));
}

void HostOffload::execute(const ir::Instruction &in, int microbatch, const KernelContext &context) {
  runInArena(program_, base_, in, microbatch, context);
}

} // namespace hspmd::runtime
