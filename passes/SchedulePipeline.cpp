// SchedulePipeline.cpp - the schedule-pipeline pass: each program's instructions in execution
// order (forward, backward with its recomputation, update; ir::expandSchedule repeats the
// first two per micro-batch in the 1F1B or GPipe order the specialize pass chose), and a copy
// per micro-batch in flight of each value a backward pass reads from its forward pass.
#include "passes/ProgramBuilder.h"

#include <algorithm>

namespace hspmd::passes {

std::map<int, ir::DeviceProgram> ProgramBuilder::schedulePipeline() {
  for (auto &[d, program] : programs_) {
    std::stable_sort(program.body.begin(), program.body.end(), [](const ir::Instruction &a, const ir::Instruction &b) {
      return ir::passOf(a.phase) < ir::passOf(b.phase);
    });
    stash(program);
  }
  return std::move(programs_);
}

// Values a forward pass produces (or loads: the inputs) and a later backward pass of the
// same micro-batch reads get one copy per micro-batch in flight on the device.
void ProgramBuilder::stash(ir::DeviceProgram &program) {
  const int inFlight = ir::maxInFlight(program.schedule);
  if (inFlight <= 1)
    return;
  std::set<int> forward; // written by a forward pass, or loaded per micro-batch
  for (const ir::Instruction &in : program.body)
    if (in.phase == ir::Phase::Forward)
      forward.insert(in.outputs.begin(), in.outputs.end());
  std::set<int> written;
  for (const ir::Instruction &in : program.body)
    written.insert(in.outputs.begin(), in.outputs.end());
  for (int b : perMicrobatch_[program.device])
    if (!written.count(b))
      forward.insert(b);
  for (const ir::Instruction &in : program.body)
    if (in.phase == ir::Phase::Recompute || in.phase == ir::Phase::Backward)
      for (int b : in.inputs)
        if (forward.count(b))
          program.buffers[static_cast<size_t>(b)].slots = inFlight;
}

} // namespace hspmd::passes
