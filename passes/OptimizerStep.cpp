// OptimizerStep.cpp - the optimizer-step pass: after the gradients are synchronised, AdamW or
// SGD per parameter; under `zero` on each device's share of the parameter, then the steps
// that rebuild the parameter's layout.
#include "ir/Tags.h"
#include "passes/Parallel.h"
#include "passes/ProgramBuilder.h"

#include <memory>
#include <utility>

namespace hspmd::passes {

void ProgramBuilder::addOptimizerStep() {
  phase_ = ir::Phase::Update;
  // The steps are emitted into empty bodies, kept apart in updates_ (ProgramBuilder.h).
  std::map<int, std::vector<ir::Instruction>> bodies;
  for (auto &[device, program] : programs_)
    bodies[device] = std::exchange(program.body, {});
  // Room for each device's new buffers and instructions (specialize has reserved room in the
  // buffer tables already: moving every buffer of every device was most of this pass).
  std::map<int, size_t> added = optimizerBuffers();
  std::vector<int> devices;
  for (auto &[d, program] : programs_) {
    devices.push_back(d);
    program.buffers.reserve(program.buffers.size() + added[d]);
    program.body.reserve(added[d]);
  }
  const size_t parts = std::min(workerCount(threads_), devices.size());
  if (parts <= 1) {
    for (const auto &[param, grad] : plan_.gradients)
      optimizerStep(*param, *grad);
  } else {
    // As in specialize: each part updates every parameter on its devices, their programs and
    // buffer tables moved in and back; a device's steps depend on nothing another device's do.
    auto builders = makeParts(parts, devices);
    for (size_t i = 0; i < devices.size(); ++i)
      moveDevice(*this, *builders[i % parts], devices[i]);
    parallelFor(parts, static_cast<int>(parts), [&](size_t t) {
      for (const auto &[param, grad] : plan_.gradients)
        builders[t]->optimizerStep(*param, *grad);
    });
    for (size_t i = 0; i < devices.size(); ++i)
      moveDevice(*builders[i % parts], *this, devices[i]);
  }
  for (auto &[device, program] : programs_)
    updates_[device] = std::exchange(program.body, std::move(bodies[device]));
}

std::map<int, size_t> ProgramBuilder::optimizerBuffers() const {
  std::map<int, size_t> added;
  for (const auto &[param, grad] : plan_.gradients)
    if (const ir::Annotation *layout = annotationOf(param)) {
      auto state = plan_.optimizerState.find(param->name);
      const bool sharded = state != plan_.optimizerState.end() && state->second != *layout;
      for (int d : (sharded ? state->second : *layout).devices())
        added[d] += sharded ? 4 : 3;
    }
  return added;
}

// After the gradients are synchronised, each device holding a parameter (or, under `zero`,
// its share of the optimizer state) updates it: AdamW with its two moment buffers, or SGD.
// Under `zero` each device updates its share, and an all-gather brings the updated shares
// back into the parameter's layout.
void ProgramBuilder::optimizerStep(const ir::Value &param, const ir::Value &grad) {
  const ir::Annotation *layout = annotationOf(&param);
  auto found = plan_.syncedGradients.find(&grad);
  const ir::Value *synced = found != plan_.syncedGradients.end() ? found->second : &grad;
  const ir::Annotation *gradLayout = annotationOf(synced);
  if (!layout || !gradLayout)
    return;
  const std::string optimizer = plan_.spec ? plan_.spec->optimizer : "adamw";
  auto state = plan_.optimizerState.find(param.name);
  const bool sharded = state != plan_.optimizerState.end() && state->second != *layout;
  const ir::Annotation &where = sharded ? state->second : *layout;
  DeviceBuffers updated; // the buffers holding the devices' updated shares
  for (int d : where.devices()) {
    if (!mine(d))
      continue;
    ir::Instruction in;
    in.kind = ir::InstrKind::Kernel;
    in.op = optimizer;
    in.loc = param.def ? param.def->loc : ir::Location{};
    in.phase = ir::Phase::Update;
    const int target = sharded ? buffer(d, &param, where, ".shard") : buffer(d, &param, *layout);
    programs_[d].buffers[static_cast<size_t>(target)].role = ir::BufferRole::Parameter;
    in.inputs = {target, buffer(d, synced, *gradLayout)};
    std::vector<const char *> moments;
    if (optimizer == "adamw")
      moments = {".adam_m", ".adam_v"};
    else if (plan_.spec && plan_.spec->optimizerArgs.count("momentum") && plan_.spec->optimizerArgs.at("momentum") != 0)
      moments = {".momentum"};
    for (const char *name : moments) { // the region of `target`: `where`'s piece
      in.inputs.push_back(sibling(d, target, param.name + name));
      programs_[d].buffers[static_cast<size_t>(in.inputs.back())].role = ir::BufferRole::State;
    }
    if (plan_.spec)
      for (const auto &[name, value] : plan_.spec->optimizerArgs)
        in.attrs[name] = value;
    in.outputs = {target};
    updated.set(d, target);
    programs_[d].body.push_back(std::move(in));
  }
  if (sharded)
    lowerSteps(
        planFor(where, &param, *layout), updated, &param,
        [&](size_t s) { return ir::tags::zeroGather(param.def ? param.def->id : 0, s); },
        param.def ? param.def->loc : ir::Location{});
}

} // namespace hspmd::passes
