// OptimizerStep.cpp - the optimizer-step pass: after the gradients are synchronised, AdamW or
// SGD per parameter; under `zero` on each device's share of the parameter, then the steps
// that rebuild the parameter's layout.
#include "ir/Tags.h"
#include "passes/Parallel.h"
#include "passes/ProgramBuilder.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
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
  classifyUpdates();
  if (parts <= 1) {
    updateAll();
  } else {
    // As in specialize: each part updates every parameter on its devices, their programs and
    // buffer tables moved in and back; a device's steps depend on nothing another device's do.
    auto builders = makeParts(parts, devices);
    for (size_t i = 0; i < devices.size(); ++i)
      moveDevice(*this, *builders[i % parts], devices[i]);
    parallelFor(parts, static_cast<int>(parts), [&](size_t t) {
      builders[t]->updateClass_ = updateClass_;
      builders[t]->updateAll();
    });
    for (size_t i = 0; i < devices.size(); ++i)
      moveDevice(*builders[i % parts], *this, devices[i]);
    for (const auto &part : builders) {
      stampedUpdates_ += part->stampedUpdates_;
      stampableUpdates_ += part->stampableUpdates_;
    }
  }
  for (auto &[device, program] : programs_)
    updates_[device] = std::exchange(program.body, std::move(bodies[device]));
}

// Each parameter's update on this builder's devices, stamped from the first update alike
// (classifyUpdates) where there is one.
void ProgramBuilder::updateAll() {
  const auto &classes = *updateClass_;
  startStamping(classes.empty() ? 0 : static_cast<size_t>(*std::max_element(classes.begin(), classes.end())) + 1);
  size_t i = 0;
  for (const auto &entry : plan_.gradients) {
    const ir::Value *param = entry.first, *grad = entry.second; // lambdas capture these (not bindings)
    const int c = i < classes.size() ? classes[i] : -1;
    ++i;
    StampUnit unit;
    if (c >= 0) {
      unit.anchor = param->def->id;
      unit.loc = param->def->loc;
      unit.inputs = {param, syncedOf(*grad)};
    }
    stampableUpdates_ += c >= 0;
    if (!emitStamped(c, unit, [&] { optimizerStep(*param, *grad); }))
      continue;
    ++stampedUpdates_;
    // What the update does to a buffer it did not make: the parameter's own buffer (where the
    // state is not sharded) becomes a parameter's, whatever made it.
    auto state = plan_.optimizerState.find(param->name);
    const ir::Annotation &layout = *annotationOf(param);
    if (state == plan_.optimizerState.end() || state->second == layout)
      for (int d : layout.devices())
        if (const int held = mine(d) ? heldBuffer(d, param) : -1; held >= 0)
          programs_[d].buffers[static_cast<size_t>(held)].role = ir::BufferRole::Parameter;
  }
  stopStamping();
}

const ir::Value *ProgramBuilder::syncedOf(const ir::Value &grad) const {
  auto found = plan_.syncedGradients.find(&grad);
  return found != plan_.syncedGradients.end() ? found->second : &grad;
}

// Parameters whose updates emit alike: the same element type, shape, annotation and buffer
// type, the same optimizer state layout, and gradients alike (the parameters of identical
// layers). By position in plan_.gradients; -1 where the parameter has no op or annotation.
void ProgramBuilder::classifyUpdates() {
  auto &classes = *updateClass_;
  classes.clear();
  std::unordered_map<uint64_t, std::vector<int>> buckets;
  std::vector<std::pair<const ir::Value *, const ir::Value *>> first; // by class
  auto alike = [&](const ir::Value *x, const ir::Value *y) {
    const ir::Annotation *ax = annotationOf(x), *ay = annotationOf(y);
    return x->type.dtype == y->type.dtype && concrete(*x) == concrete(*y) && ax && ay && *ax == *ay &&
           storageType(*x) == storageType(*y) && batchDimsOf(*x) == batchDimsOf(*y);
  };
  auto stateOf = [&](const ir::Value *param) {
    auto state = plan_.optimizerState.find(param->name);
    return state != plan_.optimizerState.end() ? &state->second : nullptr;
  };
  for (const auto &[param, grad] : plan_.gradients) {
    const ir::Value *synced = syncedOf(*grad);
    const ir::Annotation *layout = annotationOf(param);
    if (!param->def || !layout || !annotationOf(synced)) {
      classes.push_back(-1);
      continue;
    }
    uint64_t h = kHashStart;
    for (int64_t size : concrete(*param))
      mix(h, static_cast<uint64_t>(size));
    const std::vector<int> devices = layout->devices();
    mix(h, devices.size());
    if (!devices.empty())
      mix(h, static_cast<uint64_t>(devices.front()));
    auto &bucket = buckets[h];
    int c = -1;
    for (int candidate : bucket) {
      const auto &[p, s] = first[static_cast<size_t>(candidate)];
      const ir::Annotation *a = stateOf(p), *b = stateOf(param);
      if (alike(p, param) && alike(s, synced) && (a == nullptr) == (b == nullptr) && (!a || *a == *b)) {
        c = candidate;
        break;
      }
    }
    if (c < 0) {
      c = static_cast<int>(first.size());
      first.push_back({param, synced});
      bucket.push_back(c);
    }
    classes.push_back(c);
  }
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
  const ir::Value *synced = syncedOf(grad);
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
      in.inputs.push_back(sibling(d, target, param.name + name, &param));
      programs_[d].buffers[static_cast<size_t>(in.inputs.back())].role = ir::BufferRole::State;
    }
    if (!optimizerAttrs_) { // one map for every parameter's update (ir::SharedAttrs)
      ir::AttrMap attrs;
      if (plan_.spec)
        for (const auto &[name, value] : plan_.spec->optimizerArgs)
          attrs[name] = value;
      optimizerAttrs_ = std::move(attrs);
    }
    in.attrs = *optimizerAttrs_;
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
