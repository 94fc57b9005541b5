// Generated.h - what the code `hspmc build` writes calls: reading a device's program from the
// text built into the binary, and the main function of the generated binary.
#pragma once

#include "ir/DeviceProgram.h"
#include "runtime/GeneratedDevice.h"
#include "runtime/Run.h"

#include <map>
#include <string>

namespace hspmd::runtime::generated {

/// Device `device`'s program from the text hspmc build put in its source (ir::printProgram's,
/// `size` bytes). The text is the compiler's, so it reads; where it does not (a generated
/// source edited by hand) this throws std::runtime_error with the place, and main says so and
/// exits 1.
ir::DeviceProgram program(const char *text, size_t size, int device);

/// A device of a built plan: its program's text (`size` bytes, read by program()) and its
/// phase functions.
struct Device {
  const char *text;
  size_t size;
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
