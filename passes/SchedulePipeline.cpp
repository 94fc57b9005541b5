// SchedulePipeline.cpp - the schedule-pipeline pass: each program's instructions in execution
// order (forward, backward with its recomputation, update; ir::expandSchedule repeats the
// first two per micro-batch in the 1F1B or GPipe order the specialize pass chose), and a copy
// per micro-batch in flight of each value a backward pass reads from its forward pass.
#include "passes/Parallel.h"
#include "passes/ProgramBuilder.h"

#include <algorithm>
#include <iterator>

namespace hspmd::passes {

std::map<int, ir::DeviceProgram> ProgramBuilder::schedulePipeline() {
  for (auto &[device, program] : programs_)
    updates_[device]; // created here, so that the threads only look it up
  forEachProgram([&](ir::DeviceProgram &program) {
    // Stable, by pass: each instruction moved once (a sort moved each about log n times); the
    // optimizer's instructions after the body's (they are all of the update pass).
    std::vector<ir::Instruction> &updates = updates_.at(program.device);
    auto byPass = [](const ir::Instruction &a, const ir::Instruction &b) {
      return ir::passOf(a.phase) < ir::passOf(b.phase);
    };
    if (program.body.capacity() >= program.body.size() + updates.size() &&
        std::is_sorted(program.body.begin(), program.body.end(), byPass)) {
      // In order already (specialize and recompute emit by pass), with room for the updates
      // (they made it): only the updates move.
      program.body.insert(program.body.end(), std::make_move_iterator(updates.begin()),
                          std::make_move_iterator(updates.end()));
    } else {
      std::vector<ir::Instruction> body;
      body.reserve(program.body.size() + updates.size());
      for (ir::Phase pass : {ir::Phase::Forward, ir::Phase::Backward, ir::Phase::Update})
        for (ir::Instruction &in : program.body)
          if (ir::passOf(in.phase) == pass)
            body.push_back(std::move(in));
      for (ir::Instruction &in : updates)
        body.push_back(std::move(in));
      program.body = std::move(body);
    }
    updates = {};
    stash(program, perMicrobatch_.at(program.device));
  });
  return std::move(programs_);
}

std::map<int, ir::DeviceProgram> ProgramBuilder::programs() const {
  std::map<int, ir::DeviceProgram> programs = programs_;
  for (auto &[device, program] : programs)
    if (auto updates = updates_.find(device); updates != updates_.end())
      program.body.insert(program.body.end(), updates->second.begin(), updates->second.end());
  return programs;
}

void ProgramBuilder::forEachProgram(const std::function<void(ir::DeviceProgram &)> &work) {
  std::vector<ir::DeviceProgram *> programs;
  for (auto &[device, program] : programs_) {
    perMicrobatch_[device]; // created here, so that the threads only look it up
    programs.push_back(&program);
  }
  parallelFor(programs.size(), threads_, [&](size_t i) { work(*programs[i]); });
}

// Values a forward pass produces (or loads: the inputs) and a later backward pass of the
// same micro-batch reads get one copy per micro-batch in flight on the device.
void ProgramBuilder::stash(ir::DeviceProgram &program, const std::vector<char> &perMicrobatch) {
  const int inFlight = ir::maxInFlight(program.schedule);
  if (inFlight <= 1)
    return;
  // By buffer id: written by a forward pass, or loaded per micro-batch; written at all.
  std::vector<char> forward(program.buffers.size(), 0), written(program.buffers.size(), 0);
  for (const ir::Instruction &in : program.body)
    for (int b : in.outputs) {
      written[static_cast<size_t>(b)] = 1;
      forward[static_cast<size_t>(b)] |= in.phase == ir::Phase::Forward;
    }
  for (size_t b = 0; b < perMicrobatch.size() && b < written.size(); ++b)
    if (perMicrobatch[b] && !written[b])
      forward[b] = 1;
  for (const ir::Instruction &in : program.body)
    if (in.phase == ir::Phase::Recompute || in.phase == ir::Phase::Backward)
      for (int b : in.inputs)
        if (forward[static_cast<size_t>(b)])
          program.buffers[static_cast<size_t>(b)].slots = inFlight;
}

} // namespace hspmd::passes
