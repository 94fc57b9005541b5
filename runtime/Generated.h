// Generated.h - what the code `hspmc build` writes calls: helpers that build a device's
// program from constants, and the main function of the generated binary.
#pragma once

#include "ir/DeviceProgram.h"
#include "runtime/Run.h"

#include <map>
#include <string>

namespace hspmd::runtime::generated {

inline void buffer(ir::DeviceProgram &p, int id, const char *value, ir::DType dtype, std::vector<int64_t> shape,
                   std::vector<int64_t> origin, int64_t offset, int slots, bool zeroed, ir::BufferRole role) {
  ir::Buffer b;
  b.id = id;
  b.value = value;
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.origin = std::move(origin);
  b.offset = offset;
  b.slots = slots;
  b.zeroed = zeroed;
  b.role = role;
  p.buffers.push_back(std::move(b));
}

inline void instruction(ir::DeviceProgram &p, ir::InstrKind kind, const char *op, std::vector<int> inputs,
                        std::vector<int> outputs, ir::AttrMap attrs, std::vector<int> group, int peer, int64_t bytes,
                        int64_t tag, std::vector<ir::Box> slices, ir::Phase phase, int partial) {
  ir::Instruction in;
  in.kind = kind;
  in.op = op;
  in.inputs = std::move(inputs);
  in.outputs = std::move(outputs);
  in.attrs = std::move(attrs);
  in.group = std::move(group);
  in.peer = peer;
  in.bytes = bytes;
  in.tag = tag;
  in.slices = std::move(slices);
  in.phase = phase;
  in.partial = partial;
  p.body.push_back(std::move(in));
}

struct Device {
  ir::DeviceProgram (*program)();
  PhaseFunctions phases;
};

struct Plan {
  std::string name, optimizer;
  std::map<std::string, double> optimizerArgs;
  std::map<int, Device> devices;
  /// The device types its cluster gives its devices (--target cuda).
  std::map<int, std::string> deviceTypes;
};

/// The generated binary's main: parses --steps, --data, --seed, --trace, --save, --load,
/// --losses, --backend, --timeout and --switch STEP:NAME (a plan built into the binary) and
/// runs the devices (threads, or one per process under mpirun with --backend mpi), starting
/// under plans[0]. With `offload` (hspmc build --target cuda: runtime::gpu::gpuOffload) every
/// device's kernels run there, and a device whose GPU is not of the type its plan gives it
/// (one of `gpuTypes`, the GPU types of the plans' clusters) says so on stderr. With
/// `ncclOffload` (runtime::gpu::gpuNcclOffload, where hspmc's build found NCCL) it also has
/// --backend nccl: under mpirun, a GPU each, communication on NCCL (docs/gpu.md).
int main(int argc, char **argv, const ModelInfo &model, const std::vector<Plan> &plans,
         const OffloadFactory &offload = {}, const std::vector<std::string> &gpuTypes = {},
         const OffloadFactory &ncclOffload = {});

} // namespace hspmd::runtime::generated
