// Codegen.h - C++ for the CPU from DevicePrograms (hspmc build --target cpu).
//
// Each device becomes one source file: a function that builds its program from constants
// (buffers with their shapes, regions and static arena offsets; instructions with their
// attributes, groups, peers, tags and slices) and one function per phase with one call per
// instruction, in order, into the runtime (DeviceExecutor::instruction). main.cpp holds the
// model's parameters and batch and calls runtime::generated::main. The binary shares every
// kernel and collective with `hspmc train`, so both give bitwise-identical losses.
#pragma once

#include "ir/DeviceProgram.h"
#include "ir/Plan.h"
#include "runtime/Run.h"

#include <map>
#include <string>
#include <vector>

namespace hspmd::codegen {

/// Where the hspmd headers and the libraries the generated code links against are.
struct Toolchain {
  std::string sourceDir, binaryDir;
};

/// File name -> contents: device_N.cpp for each device, main.cpp and CMakeLists.txt (which
/// builds the binary `binaryName`).
std::map<std::string, std::string> generateCpu(const std::map<int, ir::DeviceProgram> &programs,
                                               const runtime::ModelInfo &model, const ir::PlanSpec &plan,
                                               const std::string &binaryName, const Toolchain &toolchain);

/// A plan of a binary that can switch plans: its programs and its spec.
struct PlanToBuild {
  const std::map<int, ir::DeviceProgram> *programs = nullptr;
  const ir::PlanSpec *plan = nullptr;
};
/// One binary for several plans of one model: it starts under plans[0], and its `--switch
/// STEP:NAME` switches to the plan named NAME (runtime/Switch.h). The devices of plan k > 0
/// are planK_device_N.cpp.
std::map<std::string, std::string> generateCpu(const std::vector<PlanToBuild> &plans, const runtime::ModelInfo &model,
                                               const std::string &binaryName, const Toolchain &toolchain);

} // namespace hspmd::codegen
