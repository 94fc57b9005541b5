// Specialize.cpp - the specialize pass: each device's ops with local shapes and offsets (its
// piece under the deduced annotations), each reshard lowered to the steps
// resolve-communication chose, gradient accumulation, and each device's pipeline stage.
#include "passes/Specialize.h"

#include "ir/Tags.h"
#include "passes/Parallel.h"
#include "passes/ProgramBuilder.h"
#include "passes/ShardingRules.h"

#include <algorithm>
#include <memory>
#include <unordered_map>

namespace hspmd::passes {

void ProgramBuilder::specialize() {
  prepare();
  analyse();
  std::vector<int> devices;
  for (const auto &[d, program] : programs_)
    devices.push_back(d);
  const size_t parts = std::min(workerCount(threads_), devices.size());
  if (parts <= 1) {
    emitAll();
    return;
  }
  // Each part walks every op but emits only its devices' instructions; a device's program and
  // buffers depend on nothing another device's emission does, so the programs are those one
  // walk builds.
  auto builders = makeParts(parts, devices);
  parallelFor(parts, static_cast<int>(parts), [&](size_t t) {
    builders[t]->prepare();
    builders[t]->emitAll();
  });
  for (size_t i = 0; i < devices.size(); ++i)
    moveDevice(*builders[i % parts], *this, devices[i]);
  for (const auto &part : builders) {
    stamped_ += part->stamped_;
    stampable_ += part->stampable_;
  }
}

std::vector<std::unique_ptr<ProgramBuilder>> ProgramBuilder::makeParts(size_t parts,
                                                                       const std::vector<int> &devices) const {
  std::vector<std::unique_ptr<ProgramBuilder>> builders;
  for (size_t t = 0; t < parts; ++t) {
    auto part = std::make_unique<ProgramBuilder>(graph_, plan_, links_, 1, bf16_);
    part->mine_.assign(static_cast<size_t>(*std::max_element(devices.begin(), devices.end())) + 1, 0);
    part->phase_ = phase_;
    part->batch_ = batch_;
    part->batchDims_ = batchDims_; // read only while the parts work
    part->gradientValues_ = gradientValues_;
    part->opAttrs_ = opAttrs_;
    part->opClass_ = opClass_;
    part->stampAlike_ = stampAlike_;
    part->keptF32_ = keptF32_;
    builders.push_back(std::move(part));
  }
  for (size_t i = 0; i < devices.size(); ++i)
    builders[i % parts]->mine_[static_cast<size_t>(devices[i])] = 1;
  return builders;
}

void ProgramBuilder::moveDevice(ProgramBuilder &from, ProgramBuilder &to, int device) {
  to.programs_[device] = std::move(from.programs_.at(device));
  if (const auto d = static_cast<size_t>(device); d < from.heldOn_.size() && !from.heldOn_[d].empty()) {
    if (d >= to.heldOn_.size())
      to.heldOn_.resize(d + 1);
    to.heldOn_[d] = std::move(from.heldOn_[d]);
  }
  if (auto it = from.perMicrobatch_.find(device); it != from.perMicrobatch_.end())
    to.perMicrobatch_[device] = std::move(it->second);
}

// What every part of specialize needs before it emits: the devices' programs with their
// stages and schedules.
void ProgramBuilder::prepare() {
  for (const auto &op : graph_.ops())
    for (const ir::Value *result : op->results)
      if (const auto &a = result->annotations.at(plan_.index))
        for (int d : a->devices()) {
          programs_[d].device = d;
          ++valuesOn_[d];
        }
  if (plan_.spec)
    if (auto b = plan_.spec->bindings.find("B"); b != plan_.spec->bindings.end())
      batch_ = b->second;
  for (auto &[d, program] : programs_) {
    program.plan = plan_.index;
    assignStage(program);
  }
}

// What the graph says for every device: the gradients, which dimensions grow with the batch
// (a sharding rule per op), which values stay f32. Once per plan: specialize's parts share it.
void ProgramBuilder::analyse() {
  for (const auto &[param, grad] : plan_.gradients)
    gradientValues_.insert(grad);
  batchDims_->assign(graph_.numValues(), std::nullopt);
  ShardingRuleCache rules; // the ops of identical layers share theirs
  for (const auto &op : graph_.ops())
    findBatchDims(*op, rules);
  findKeptF32();
  opAttrs_->reserve(graph_.ops().size());
  for (const auto &op : graph_.ops())
    opAttrs_->push_back(op->attrs);
  classifyOps();
}

void ProgramBuilder::findKeptF32() {
  if (!bf16_)
    return;
  for (const auto &op : graph_.ops())
    if (op->kind == ir::OpKind::Param)
      keptF32_.insert(op->result());
  for (const auto &[param, grad] : plan_.gradients)
    keptF32_.insert(grad);
  for (const ir::Value *output : graph_.outputs)
    keptF32_.insert(output);
  for (bool changed = true; changed;) { // along chains of reshards, either way
    changed = false;
    for (const auto &op : graph_.ops())
      if (op->kind == ir::OpKind::Reshard && keptF32_.count(op->operands[0]) != keptF32_.count(op->result())) {
        keptF32_.insert(op->operands[0]);
        keptF32_.insert(op->result());
        changed = true;
      }
  }
}

ir::DType ProgramBuilder::storageType(const ir::Value &value) const {
  return bf16_ && value.type.dtype == ir::DType::F32 && !keptF32_.count(&value) ? ir::DType::BF16 : value.type.dtype;
}

// Each op on each of this part's devices, in graph order, then who reports the loss.
void ProgramBuilder::emitAll() {
  // Room for what the device's values make, so that its vectors are not moved as they grow
  // (a buffer per value and about one instruction, a few more for messages and
  // accumulators). The buffer table also gets room for what the later passes add: a copy of
  // each forward buffer where the stage recomputes (at most), the optimizer's buffers.
  // Moving the tables of every device, twice, was most of optimizer-step; room reserved
  // and never used is never touched.
  const std::map<int, size_t> optimizer = optimizerBuffers();
  for (auto &[d, program] : programs_)
    if (mine(d)) {
      const auto o = optimizer.find(d);
      program.buffers.reserve(valuesOn_[d] + valuesOn_[d] / 4 + (recompute_.count(d) ? valuesOn_[d] : 0) +
                              (o != optimizer.end() ? o->second : 0));
      program.body.reserve(valuesOn_[d] + valuesOn_[d] / 4 + (o != optimizer.end() ? o->second : 0));
    }
  startStamping(opClass_->empty() ? 0 : static_cast<size_t>(*std::max_element(opClass_->begin(), opClass_->end())) + 1);
  for (const auto &op : graph_.ops()) {
    phase_ = phaseOf(*op);
    const auto id = static_cast<size_t>(op->id);
    const int c = id < opClass_->size() ? (*opClass_)[id] : -1;
    stampable_ += c >= 0;
    stamped_ += emitStamped(c, c >= 0 ? unitOf(*op) : StampUnit{}, [&] {
      emit(*op);
      if (phase_ == ir::Phase::Backward)
        for (const ir::Value *result : op->results) // rmsnorm_grad's second result is dw
          if (gradientValues_.count(result))
            accumulate(result);
    });
  }
  stopStamping();
  reportLoss();
}

// Classes of ops that emit alike, found by a hash of what they emit from and compared in
// full. Parameters, inputs and other plans' reshards are emitted as they are (they emit no
// instructions).
void ProgramBuilder::classifyOps() {
  auto &classes = *opClass_;
  classes.assign(graph_.ops().size(), -1);
  std::unordered_map<uint64_t, std::vector<int>> buckets;
  std::vector<const ir::Op *> first; // by class
  for (const auto &op : graph_.ops()) {
    if (op->kind == ir::OpKind::Param || op->kind == ir::OpKind::Input || !annotationOf(op->result()) ||
        (op->kind == ir::OpKind::Reshard && ir::intAttr(op->attrs, "plan", -1) != plan_.index) ||
        op->operands.size() > 16)
      continue;
    uint64_t h = kHashStart;
    mix(h, static_cast<uint64_t>(op->kind));
    mix(h, op->operands.size());
    auto value = [&](const ir::Value *v) {
      for (int64_t size : concrete(*v))
        mix(h, static_cast<uint64_t>(size));
      if (const ir::Annotation *a = annotationOf(v))
        for (const ir::LocalAnnotation &group : a->subgroups) {
          mix(h, group.devices.size());
          if (!group.devices.empty())
            mix(h, static_cast<uint64_t>(group.devices.front()));
          for (const ir::MeshAxis &axis : group.axes)
            mix(h, static_cast<uint64_t>(axis.kind) * 4096 + static_cast<uint64_t>(axis.dim) * 64 +
                       static_cast<uint64_t>(axis.count));
        }
    };
    for (const ir::Value *v : op->operands)
      value(v);
    for (const ir::Value *v : op->results)
      value(v);
    auto &bucket = buckets[h];
    int c = -1;
    for (int candidate : bucket)
      if (emitsAlike(*first[static_cast<size_t>(candidate)], *op)) {
        c = candidate;
        break;
      }
    if (c < 0) {
      c = static_cast<int>(first.size());
      first.push_back(op.get());
      bucket.push_back(c);
    }
    classes[static_cast<size_t>(op->id)] = c;
  }
}

// Whether `a` and `b` emit the same instructions and buffers on every device, but for the
// values' names, buffer ids, tags and locations: the same kind and attributes, operands and
// results alike (element type, shape, annotation, batch dimensions, buffer type, gradient or
// not), the same operand repeated alike, the same phase and communication plan.
bool ProgramBuilder::emitsAlike(const ir::Op &a, const ir::Op &b) const {
  if (a.kind != b.kind || a.operands.size() != b.operands.size() || a.results.size() != b.results.size() ||
      !(a.attrs == b.attrs) || phaseOf(a) != phaseOf(b))
    return false;
  auto alike = [&](const ir::Value *x, const ir::Value *y) {
    const ir::Annotation *ax = annotationOf(x), *ay = annotationOf(y);
    return x->type.dtype == y->type.dtype && concrete(*x) == concrete(*y) && (ax == nullptr) == (ay == nullptr) &&
           (!ax || *ax == *ay) && batchDimsOf(*x) == batchDimsOf(*y) && storageType(*x) == storageType(*y) &&
           gradientValues_.count(x) == gradientValues_.count(y);
  };
  for (size_t i = 0; i < a.operands.size(); ++i) {
    if (!alike(a.operands[i], b.operands[i]))
      return false;
    for (size_t j = 0; j < i; ++j)
      if ((a.operands[i] == a.operands[j]) != (b.operands[i] == b.operands[j]))
        return false;
  }
  for (size_t r = 0; r < a.results.size(); ++r)
    if (!alike(a.results[r], b.results[r]))
      return false;
  if (a.kind == ir::OpKind::Reshard) {
    const auto pa = plan_.communication.find(&a), pb = plan_.communication.find(&b);
    const bool hasA = pa != plan_.communication.end(), hasB = pb != plan_.communication.end();
    if (hasA != hasB || (hasA && pa->second != pb->second))
      return false;
  }
  return true;
}

namespace {

// Whether the instruction's tag is its op's (ir/Tags.h): messages, collectives, and kernels
// that exchange inside (the vocabulary-parallel cross-entropy). Kernels and copies have none.
bool tagged(const ir::Instruction &in) {
  return in.kind == ir::InstrKind::Collective || in.kind == ir::InstrKind::Send || in.kind == ir::InstrKind::Recv ||
         (in.kind == ir::InstrKind::Kernel && !in.group.empty());
}

} // namespace

ProgramBuilder::StampUnit ProgramBuilder::unitOf(const ir::Op &op) {
  StampUnit unit;
  unit.anchor = op.id;
  unit.loc = op.loc;
  unit.inputs.assign(op.operands.begin(), op.operands.end());
  unit.outputs.assign(op.results.begin(), op.results.end());
  return unit;
}

std::vector<ProgramBuilder::StampedDevice> ProgramBuilder::beforeEmitting(const StampUnit &unit) const {
  std::vector<StampedDevice> devices;
  devices.reserve(emitting_.size());
  for (const auto &[d, program] : emitting_) {
    StampedDevice device;
    device.device = d;
    device.program = program;
    device.body0 = program->body.size();
    device.buf0 = program->buffers.size();
    for (const ir::Value *input : unit.inputs)
      device.held.push_back(heldBuffer(d, input));
    devices.push_back(std::move(device));
  }
  return devices;
}

// The stamp is usable where everything the unit emitted can be renamed and renumbered: each
// buffer made for one of its values, each buffer an instruction names made here or holding
// an input, each output held (if at all) in a buffer made here, each tag the unit's own,
// each location the unit's.
void ProgramBuilder::record(StampUnit unit, std::vector<StampedDevice> before, Stamp &stamp) {
  stamp.usable = true;
  auto ownValue = [&unit](const ir::Value *v) {
    return v && (std::find(unit.outputs.begin(), unit.outputs.end(), v) != unit.outputs.end() ||
                 std::find(unit.inputs.begin(), unit.inputs.end(), v) != unit.inputs.end());
  };
  for (StampedDevice &device : before) {
    device.body1 = device.program->body.size();
    device.buf1 = device.program->buffers.size();
    if (device.body1 == device.body0 && device.buf1 == device.buf0)
      continue;
    const auto &made = madeFor_[static_cast<size_t>(device.device)];
    for (size_t b = device.buf0; b < device.buf1; ++b)
      stamp.usable = stamp.usable && b < made.size() && ownValue(made[b]);
    for (const ir::Value *output : unit.outputs)
      if (const int held = heldBuffer(device.device, output); held >= 0)
        stamp.usable =
            stamp.usable && static_cast<size_t>(held) >= device.buf0 && static_cast<size_t>(held) < device.buf1;
    auto known = [&](int id) {
      return (id >= 0 && static_cast<size_t>(id) >= device.buf0 && static_cast<size_t>(id) < device.buf1) ||
             (id >= 0 && std::find(device.held.begin(), device.held.end(), id) != device.held.end());
    };
    for (size_t i = device.body0; i < device.body1 && stamp.usable; ++i) {
      const ir::Instruction &in = device.program->body[i];
      for (int id : in.inputs)
        stamp.usable = stamp.usable && known(id);
      for (int id : in.outputs)
        stamp.usable = stamp.usable && known(id);
      stamp.usable = stamp.usable && (tagged(in) ? in.tag / ir::tags::kSlotsPerOp == unit.anchor : in.tag == 0) &&
                     in.loc.file == unit.loc.file && in.loc.line == unit.loc.line && in.loc.col == unit.loc.col &&
                     in.loc.length == unit.loc.length;
    }
    stamp.devices.push_back(std::move(device));
  }
  stamp.unit = std::move(unit);
  stamp.recorded = true;
}

bool ProgramBuilder::stampFrom(const StampUnit &unit, const Stamp &stamp) {
  const StampUnit &from = stamp.unit;
  // The inputs must be held alike on each device: held or not, the same buffer where the
  // stamp's unit had one buffer for two inputs.
  for (const StampedDevice &device : stamp.devices)
    for (size_t p = 0; p < unit.inputs.size(); ++p) {
      const int mine = heldBuffer(device.device, unit.inputs[p]);
      if ((mine >= 0) != (device.held[p] >= 0))
        return false;
      for (size_t q = 0; q < p; ++q)
        if ((device.held[p] == device.held[q]) != (mine == heldBuffer(device.device, unit.inputs[q])))
          return false;
    }
  auto counterpart = [&](const ir::Value *v) -> const ir::Value * {
    for (size_t r = 0; r < from.outputs.size(); ++r)
      if (from.outputs[r] == v)
        return unit.outputs[r];
    for (size_t p = 0; p < from.inputs.size(); ++p)
      if (from.inputs[p] == v)
        return unit.inputs[p];
    return nullptr;
  };
  const int64_t tagShift = (static_cast<int64_t>(unit.anchor) - from.anchor) * ir::tags::kSlotsPerOp;
  for (const StampedDevice &device : stamp.devices) {
    const int d = device.device;
    ir::DeviceProgram &program = *device.program;
    const auto base = program.buffers.size();
    auto renumber = [&](int id) {
      const auto i = static_cast<size_t>(id);
      if (i >= device.buf0 && i < device.buf1)
        return static_cast<int>(base + (i - device.buf0));
      for (size_t p = 0; p < device.held.size(); ++p)
        if (device.held[p] == id)
          return heldBuffer(d, unit.inputs[p]);
      return -1; // not reached: record checked every id
    };
    auto &made = madeFor_[static_cast<size_t>(d)];
    std::vector<char> *batched = nullptr;
    if (auto it = perMicrobatch_.find(d); it != perMicrobatch_.end())
      batched = &it->second;
    for (size_t b = device.buf0; b < device.buf1; ++b) {
      ir::Buffer copy = program.buffers[b];
      const ir::Value *was = made[b], *is = counterpart(was);
      copy.id = static_cast<int>(program.buffers.size());
      copy.value = is->name + copy.value.substr(was->name.size());
      if (batched && b < batched->size() && (*batched)[b])
        markBatched(*batched, copy.id);
      if (made.size() <= static_cast<size_t>(copy.id))
        made.resize(static_cast<size_t>(copy.id) + 1, nullptr);
      made[static_cast<size_t>(copy.id)] = is;
      program.buffers.push_back(std::move(copy));
    }
    auto rememberAlike = [&](const ir::Value *was, const ir::Value *is) {
      const int held = heldBuffer(d, was);
      if (held >= 0 && static_cast<size_t>(held) >= device.buf0 && static_cast<size_t>(held) < device.buf1)
        remember(d, is, renumber(held));
    };
    for (size_t r = 0; r < from.outputs.size(); ++r)
      rememberAlike(from.outputs[r], unit.outputs[r]);
    for (size_t p = 0; p < from.inputs.size(); ++p)
      rememberAlike(from.inputs[p], unit.inputs[p]);
    for (size_t i = device.body0; i < device.body1; ++i) {
      ir::Instruction in = program.body[i];
      for (int &id : in.inputs)
        id = renumber(id);
      for (int &id : in.outputs)
        id = renumber(id);
      if (tagged(in))
        in.tag += tagShift;
      in.loc = unit.loc;
      program.body.push_back(std::move(in));
    }
  }
  return true;
}

void ProgramBuilder::startStamping(size_t classes) {
  emitting_.clear();
  for (auto &[d, program] : programs_)
    if (mine(d))
      emitting_.push_back({d, &program});
  madeFor_.assign(emitting_.empty() ? 0 : static_cast<size_t>(emitting_.back().first) + 1, {});
  stamps_.assign(classes, Stamp{});
}

void ProgramBuilder::stopStamping() {
  stamps_.clear();
  madeFor_.clear();
  emitting_.clear();
}

bool ProgramBuilder::emitStamped(int c, const StampUnit &unit, const std::function<void()> &emitIt) {
  Stamp *stamp = c >= 0 && stampAlike_ ? &stamps_[static_cast<size_t>(c)] : nullptr;
  if (stamp && stamp->usable && stampFrom(unit, *stamp))
    return true;
  if (!stamp || stamp->recorded) {
    emitIt();
    return false;
  }
  std::vector<StampedDevice> before = beforeEmitting(unit);
  emitIt();
  record(unit, std::move(before), *stamp);
  return false;
}

// Gradient synchronisation runs once per step, after every micro-batch; the backward ops
// and the reshards of their results run in backward slots; everything else in forward ones.
ir::Phase ProgramBuilder::phaseOf(const ir::Op &op) const {
  const ir::Op *source = &op;
  if (op.kind == ir::OpKind::Reshard) {
    if (isGradientSync(op))
      return ir::Phase::Update;
    while (source->kind == ir::OpKind::Reshard && source->operands[0]->def)
      source = source->operands[0]->def;
  }
  return plan_.backwardOps.count(source) ? ir::Phase::Backward : ir::Phase::Forward;
}

// The device's stage in its pipeline and the pass order over its micro-batches.
void ProgramBuilder::assignStage(ir::DeviceProgram &program) {
  const ir::PlanSpec *spec = plan_.spec;
  if (!spec)
    return;
  program.scheduleName = spec->schedule;
  for (size_t p = 0; p < spec->pipelines.size(); ++p) {
    const ir::PipelineSpec &pipeline = spec->pipelines[p];
    for (size_t s = 0; s < pipeline.stages.size(); ++s) {
      const auto &devices = pipeline.stages[s].devices;
      if (std::find(devices.begin(), devices.end(), program.device) == devices.end())
        continue;
      program.stage = static_cast<int>(s);
      program.stages = static_cast<int>(pipeline.stages.size());
      stageOf_[program.device] = {p, s};
      program.microbatches = static_cast<int>(std::max<int64_t>(1, pipeline.microbatches));
      if (p < plan_.batchPerPipeline.size()) {
        program.microbatchSize = plan_.batchPerPipeline[p] / program.microbatches;
        int64_t start = 0;
        for (size_t q = 0; q < p; ++q)
          start += plan_.batchPerPipeline[q];
        program.batchStart = start;
      }
      if (pipeline.stages[s].recompute && !plan_.backwardOps.empty())
        recompute_.insert(program.device);
    }
  }
  program.schedule = ir::pipelineSchedule(program.scheduleName, program.stage, program.stages, program.microbatches);
  if (plan_.backwardOps.empty()) // inference: forward passes only
    std::erase_if(program.schedule, [](const ir::ScheduleSlot &slot) { return slot.phase == ir::Phase::Backward; });
}

void ProgramBuilder::remember(int device, const ir::Value *value, int id) {
  const auto d = static_cast<size_t>(device);
  if (d >= heldOn_.size())
    heldOn_.resize(d + 1);
  if (heldOn_[d].empty())
    heldOn_[d].assign(graph_.numValues(), -1);
  heldOn_[d][static_cast<size_t>(value->id)] = id;
}

ProgramBuilder::DeviceBuffers ProgramBuilder::heldBuffers(const ir::Value *value, const ir::Annotation &layout) const {
  std::vector<std::pair<int, int>> entries;
  for (int d : layout.devices())
    if (const int held = heldBuffer(d, value); held >= 0)
      entries.push_back({d, held});
  return DeviceBuffers(std::move(entries));
}

const ir::Annotation *ProgramBuilder::annotationOf(const ir::Value *v) const {
  const auto &a = v->annotations.at(plan_.index);
  return a ? &*a : nullptr;
}

const std::vector<int64_t> &ProgramBuilder::concrete(const ir::Value &v) const {
  const auto id = static_cast<size_t>(v.id);
  if (id >= concrete_.size())
    concrete_.resize(std::max(graph_.numValues(), id + 1));
  if (!concrete_[id])
    concrete_[id] = ir::sizesWithUnboundAsOne(v.type.shape);
  return *concrete_[id];
}

// The buffer of `value` on `device` (its local piece under `layout`).
int ProgramBuilder::buffer(int device, const ir::Value *value, const ir::Annotation &layout,
                           const std::string &suffix) {
  if (suffix.empty())
    if (const int held = heldBuffer(device, value); held >= 0)
      return held;
  ir::DeviceProgram &program = programs_[device];
  ir::Buffer b;
  b.id = static_cast<int>(program.buffers.size());
  b.value = value->name + suffix;
  b.dtype = storageType(*value);
  auto pieces = ir::ownedRegion(layout, concrete(*value), device);
  if (!pieces.empty()) {
    ir::Box box = toMicrobatch(device, *value, std::move(pieces[0].box));
    b.shape.resize(box.lo.size());
    for (size_t d = 0; d < box.lo.size(); ++d)
      b.shape[d] = box.hi[d] - box.lo[d];
    b.origin = std::move(box.lo);
  }
  if (isBatchDependent(*value))
    markBatched(perMicrobatch_[device], b.id);
  const int id = b.id;
  if (const auto d = static_cast<size_t>(device); d < madeFor_.size()) {
    if (madeFor_[d].size() <= static_cast<size_t>(id))
      madeFor_[d].resize(static_cast<size_t>(id) + 1, nullptr);
    madeFor_[d][static_cast<size_t>(id)] = value;
  }
  program.buffers.push_back(std::move(b));
  if (suffix.empty())
    remember(device, value, id);
  return id;
}

int ProgramBuilder::sibling(int device, int of, const std::string &name, const ir::Value *value) {
  ir::DeviceProgram &program = programs_[device];
  ir::Buffer b;
  const ir::Buffer &like = program.buffers[static_cast<size_t>(of)];
  b.id = static_cast<int>(program.buffers.size());
  b.value = name;
  b.dtype = like.dtype;
  b.shape = like.shape;
  b.origin = like.origin;
  if (auto batched = perMicrobatch_.find(device); batched != perMicrobatch_.end() &&
                                                  static_cast<size_t>(of) < batched->second.size() &&
                                                  batched->second[static_cast<size_t>(of)])
    markBatched(batched->second, b.id);
  if (const auto d = static_cast<size_t>(device); value && d < madeFor_.size()) {
    if (madeFor_[d].size() <= static_cast<size_t>(b.id))
      madeFor_[d].resize(static_cast<size_t>(b.id) + 1, nullptr);
    madeFor_[d][static_cast<size_t>(b.id)] = value;
  }
  program.buffers.push_back(std::move(b));
  return program.buffers.back().id;
}

void ProgramBuilder::findBatchDims(const ir::Op &op, ShardingRuleCache &rules) {
  if (batch_ <= 0 || op.kind == ir::OpKind::Param)
    return;
  auto &all = *batchDims_;
  auto set = [&all](const ir::Value *value, std::vector<bool> dims) {
    const auto id = static_cast<size_t>(value->id);
    if (id >= all.size())
      all.resize(id + 1);
    all[id] = std::move(dims);
  };
  if (op.kind == ir::OpKind::Input) {
    std::vector<bool> dims(op.result()->type.shape.size(), false);
    if (!dims.empty())
      dims[0] = true;
    set(op.result(), dims);
    return;
  }
  if (op.kind == ir::OpKind::Reshard) {
    if (const auto &dims = batchDimsOf(*op.operands[0]))
      set(op.result(), *dims);
    return;
  }
  const OpShardingRule &rule = rules.of(op);
  std::set<int> factors;
  for (size_t i = 0; i < op.operands.size() && i < rule.operands.size(); ++i)
    if (const auto &dims = batchDimsOf(*op.operands[i]))
      for (size_t d = 0; d < dims->size() && d < rule.operands[i].size(); ++d)
        if ((*dims)[d])
          factors.insert(rule.operands[i][d].begin(), rule.operands[i][d].end());
  if (factors.empty())
    return;
  for (size_t r = 0; r < op.results.size() && r < rule.results.size(); ++r) {
    std::vector<bool> dims(rule.results[r].size(), false);
    bool any = false;
    for (size_t d = 0; d < dims.size(); ++d)
      for (int f : rule.results[r][d])
        if (factors.count(f))
          dims[d] = any = true;
    if (any)
      set(op.results[r], dims);
  }
}

// Global regions of batch-dependent values in micro-batch coordinates: one micro-batch of
// a pipeline holding samples [P, P + n) of the batch covers [P, P + n / m). Devices of one
// pipeline agree on them, so the slices of the messages between them do too.
ir::Box ProgramBuilder::toMicrobatch(int device, const ir::Value &value, ir::Box box) const {
  const ir::DeviceProgram &program = programs_.at(device);
  const int m = program.microbatches;
  if (m <= 1 || batch_ <= 0) // one micro-batch, or a batch the plan does not bind
    return box;
  const auto &sizes = concrete(value);
  const auto &dims = batchDimsOf(value);
  if (!dims)
    return box;
  for (size_t d = 0; d < box.lo.size() && d < dims->size(); ++d) {
    if (!(*dims)[d])
      continue;
    const int64_t perSample = sizes[d] / batch_; // elements of this dim per sample
    const int64_t from = program.batchStart * perSample;
    box.lo[d] = from + (box.lo[d] - from) / m;
    box.hi[d] = from + (box.hi[d] - from) / m;
  }
  return box;
}

int64_t ProgramBuilder::sliceBytes(const std::vector<ir::Box> &slices, const ir::Value &value) const {
  int64_t n = 0;
  for (const ir::Box &box : slices)
    n += box.numElements();
  return n * ir::dtypeBytes(storageType(value));
}

void ProgramBuilder::emit(const ir::Op &op) {
  const ir::Annotation *out = annotationOf(op.result());
  if (!out)
    return;
  if (op.kind == ir::OpKind::Param || op.kind == ir::OpKind::Input) {
    for (int d : out->devices())
      if (mine(d))
        programs_[d].buffers[static_cast<size_t>(buffer(d, op.result(), *out))].role =
            op.kind == ir::OpKind::Param ? ir::BufferRole::Parameter : ir::BufferRole::Input;
    return;
  }
  if (op.kind == ir::OpKind::Reshard) {
    if (ir::intAttr(op.attrs, "plan", -1) != plan_.index) {
      for (int d : out->devices()) // another plan's reshard: the same buffer
        if (const int held = heldBuffer(d, op.operands[0]); held >= 0)
          remember(d, op.result(), held);
      return;
    }
    reshard(op);
    return;
  }
  for (int d : out->devices()) {
    if (!mine(d))
      continue;
    ir::Instruction in;
    in.kind = ir::InstrKind::Kernel;
    in.op = std::string(ir::opInfo(op.kind).name);
    in.attrs = opAttr(op);
    in.loc = op.loc;
    for (const ir::Value *operand : op.operands)
      in.inputs.push_back(buffer(d, operand, *annotationOf(operand)));
    for (const ir::Value *result : op.results)
      in.outputs.push_back(buffer(d, result, *annotationOf(result)));
    localize(op, d, in);
    in.phase = phase_;
    programs_[d].body.push_back(std::move(in));
  }
}

// Attributes that depend on the device's piece.
void ProgramBuilder::localize(const ir::Op &op, int d, ir::Instruction &in) {
  auto lo = [&](const ir::Value *v, int dim) {
    auto pieces = ir::ownedRegion(*annotationOf(v), concrete(*v), d);
    return pieces.empty() ? int64_t{0} : pieces[0].box.lo[dim];
  };
  if (op.kind == ir::OpKind::Attention || op.kind == ir::OpKind::AttentionGrad) {
    in.attrs["query_offset"] = lo(op.operands[0], 1);
    in.attrs["key_offset"] = lo(op.operands[1], 1);
  }
  if (op.kind == ir::OpKind::Reshape || op.kind == ir::OpKind::Broadcast) {
    std::vector<ir::SymExpr> local;
    for (int64_t size : programs_[d].buffers[static_cast<size_t>(in.outputs[0])].shape)
      local.push_back(size);
    in.attrs["shape"] = local;
  }
  if (op.kind == ir::OpKind::CrossEntropy || op.kind == ir::OpKind::CrossEntropyGrad) {
    // Token-weighted mean: every device divides its local sum by the global token count, so
    // the partial losses (and gradients) of pipelines or sequence pieces holding different
    // numbers of tokens add up to the exact mean.
    int64_t tokens = 1;
    const auto logits = concrete(*op.operands[0]);
    for (size_t axis = 0; axis + 1 < logits.size(); ++axis)
      tokens *= logits[axis];
    in.attrs["tokens"] = tokens;
    vocabParallel(op, d, in);
  }
  if (op.kind == ir::OpKind::EmbeddingGrad || op.kind == ir::OpKind::Embedding) {
    in.attrs["vocab_offset"] = lo(op.kind == ir::OpKind::Embedding ? op.operands[0] : op.result(), 0);
  }
}

// Logits split over the vocabulary: the loss of a row needs the maximum, the sum of
// exponentials and the target's logit over every piece of the row. The kernel exchanges
// them (Megatron's vocabulary-parallel cross-entropy) with the devices holding the other
// pieces of the same rows (same replica): its group.
void ProgramBuilder::vocabParallel(const ir::Op &op, int d, ir::Instruction &in) {
  const ir::Value *logits = op.operands[0];
  const ir::Annotation &layout = *annotationOf(logits);
  const auto &shape = concrete(*logits);
  const auto mine = ir::ownedRegion(layout, shape, d);
  if (mine.empty() || shape.empty() || mine[0].box.hi.back() - mine[0].box.lo.back() == shape.back())
    return;
  in.attrs["vocab_offset"] = mine[0].box.lo.back();
  std::vector<int> members;
  for (int e : layout.devices()) {
    const auto theirs = ir::ownedRegion(layout, shape, e);
    if (theirs.empty() || theirs[0].replica != mine[0].replica)
      continue;
    bool sameRows = true;
    for (size_t dim = 0; dim + 1 < shape.size(); ++dim)
      sameRows =
          sameRows && theirs[0].box.lo[dim] == mine[0].box.lo[dim] && theirs[0].box.hi[dim] == mine[0].box.hi[dim];
    if (sameRows)
      members.push_back(e);
  }
  std::sort(members.begin(), members.end());
  in.group = std::move(members);
  in.tag = ir::tags::crossEntropy(op.id);
}

// A reshard op: the steps resolve-communication chose for it (planned here only when its
// shape was not bound then).
void ProgramBuilder::reshard(const ir::Op &op) {
  const ir::Annotation &from = *annotationOf(op.operands[0]), &to = *annotationOf(op.result());
  auto resolved = plan_.communication.find(&op);
  const CommPlan &comm = resolved != plan_.communication.end() ? *resolved->second : planFor(from, op.result(), to);
  lowerSteps(
      comm, heldBuffers(op.operands[0], from), op.result(), [&](size_t s) { return ir::tags::reshardStep(op.id, s); },
      op.loc);
}

const CommPlan &ProgramBuilder::planFor(const ir::Annotation &from, const ir::Value *to,
                                        const ir::Annotation &toLayout) {
  return reshardPlans_.plan(concrete(*to), ir::dtypeBytes(to->type.dtype), from, toLayout);
}

// One device of each replica group of the model's output reports its part of the loss.
void ProgramBuilder::reportLoss() {
  if (graph_.outputs.empty())
    return;
  const ir::Value *loss = graph_.outputs[0];
  const ir::Annotation *layout = annotationOf(loss);
  if (!layout)
    return;
  for (int d : layout->devices()) {
    if (!mine(d))
      continue;
    const int held = heldBuffer(d, loss);
    auto pieces = ir::ownedRegion(*layout, concrete(*loss), d);
    if (held >= 0 && !pieces.empty() && pieces[0].replica == 0)
      programs_[d].lossBuffer = held;
  }
}

// With several micro-batches, each backward pass adds its part of a parameter's gradient
// to an accumulator (zero at the start of the step); the synchronisation and the optimizer
// read the accumulator.
void ProgramBuilder::accumulate(const ir::Value *grad) {
  const ir::Annotation *layout = annotationOf(grad);
  if (!layout)
    return;
  for (int d : layout->devices()) {
    if (!mine(d))
      continue;
    const int partial = heldBuffer(d, grad);
    if (programs_[d].microbatches <= 1 || partial < 0)
      continue;
    const int sum = buffer(d, grad, *layout, ".acc");
    ir::DeviceProgram &program = programs_[d];
    program.buffers[static_cast<size_t>(sum)].zeroed = true;
    ir::Instruction in;
    in.kind = ir::InstrKind::Copy;
    in.op = "copy-add";
    in.inputs = {partial};
    in.outputs = {sum};
    in.slices = {program.buffers[static_cast<size_t>(partial)].region()};
    in.loc = grad->def ? grad->def->loc : ir::Location{};
    in.phase = ir::Phase::Backward;
    program.body.push_back(std::move(in));
    remember(d, grad, sum);
  }
}

// Moves a value (held in `source`'s buffers) into `to`'s buffers, as the steps of its
// communication plan.
void ProgramBuilder::lowerSteps(const CommPlan &comm, DeviceBuffers source, const ir::Value *to,
                                const std::function<int64_t(size_t)> &tagOf, const ir::Location &loc) {
  const auto &shape = concrete(*to);
  for (size_t s = 0; s < comm.steps.size(); ++s) {
    const CommStep &step = comm.steps[s];
    const bool last = s + 1 == comm.steps.size();
    const std::string suffix = last ? "" : ".step" + std::to_string(s);
    const int64_t tag = tagOf(s);
    const bool collective = ir::isCollective(step.kind);
    std::set<int> involved;
    for (int d : step.to.devices())
      if (mine(d))
        involved.insert(d);
    DeviceBuffers target;
    for (int d : involved)
      target.set(d, buffer(d, to, step.to, suffix));
    // A collective writes its members' whole outputs (each element the sum, or the copy,
    // of the members' inputs that hold it), own part included; devices outside its groups
    // copy their own part. Before a batched send/receive each device copies its own part
    // first, and receives then land on (or add to) it.
    std::set<int> members;
    if (collective)
      for (const auto &group : step.groups)
        members.insert(group.begin(), group.end());
    // Targets start from zero where something adds to them or leaves part of them unwritten
    // (a partial sum's other copies hold zeros). Only targets outside the collective's groups
    // are asked; a collective's groups hold every device its messages reach, and the compiler
    // keeps none of them (LinkModel::referenceMessages): the messages asked are a send/receive's.
    std::set<int> outside;
    for (const auto &[d, buffer] : target)
      if (!members.count(d))
        outside.insert(d);
    std::map<int, int64_t> written;
    std::set<int> adds;
    if (!outside.empty()) {
      for (const LocalCopy &copy : step.local) {
        written[copy.device] += copy.box.numElements();
        if (copy.add)
          adds.insert(copy.device);
      }
      for (const Message &m : step.messages) {
        if (!outside.count(m.to))
          continue;
        for (const ir::Box &box : m.boxes)
          written[m.to] += box.numElements();
        if (m.add)
          adds.insert(m.to);
      }
    }
    for (const auto &[d, buffer] : target) {
      if (!outside.count(d))
        continue;
      const auto pieces = ir::ownedRegion(step.to, shape, d);
      const int64_t size = pieces.empty() ? 0 : pieces[0].box.numElements();
      if (!adds.count(d) && written[d] >= size)
        continue;
      ir::Instruction zero;
      zero.kind = ir::InstrKind::Copy;
      zero.op = "zero";
      zero.outputs = {buffer};
      zero.loc = loc;
      zero.phase = phase_;
      programs_[d].body.push_back(std::move(zero));
    }
    for (const LocalCopy &copy : step.local)
      if (mine(copy.device) && source.find(copy.device) >= 0 && target.find(copy.device) >= 0 &&
          !members.count(copy.device)) {
        ir::Instruction in;
        in.kind = ir::InstrKind::Copy;
        in.op = copy.add ? "copy-add" : "copy";
        in.slices = {toMicrobatch(copy.device, *to, copy.box)};
        in.inputs.push_back(source.find(copy.device));
        in.outputs.push_back(target.find(copy.device));
        in.loc = loc;
        in.phase = phase_;
        programs_[copy.device].body.push_back(std::move(in));
      }
    if (collective) {
      for (const auto &group : step.groups) {
        const ir::DeviceGroup shared(group); // one copy for all its members' instructions
        for (int d : group) {
          if (!mine(d))
            continue;
          ir::Instruction in;
          in.kind = ir::InstrKind::Collective;
          in.op = std::string(commKindName(step.kind));
          in.group = shared;
          in.tag = tag;
          in.loc = loc;
          in.bytes = step.bytesReceived.count(d) ? step.bytesReceived.at(d) : 0;
          // Plans count the value's own element type (resolve-communication, planFor); its
          // buffers may hold a narrower one (bf16).
          in.bytes = in.bytes / ir::dtypeBytes(to->type.dtype) * ir::dtypeBytes(storageType(*to));
          if (isBatchDependent(*to))
            in.bytes /= programs_[d].microbatches;
          if (const int input = source.find(d); input >= 0)
            in.inputs.push_back(input);
          if (const int output = target.find(d); output >= 0)
            in.outputs.push_back(output);
          if (auto held = ir::ownedRegion(step.from, shape, d); !held.empty())
            in.partial = held[0].partial;
          in.phase = phase_;
          programs_[d].body.push_back(std::move(in));
          involved.erase(d);
        }
      }
    } else {
      // Batched send/receive: every device posts its sends, then its receives, peers in
      // increasing order: one grouped call per device and step.
      auto message = [&](const Message &m, bool sending) {
        const int device = sending ? m.from : m.to;
        if (!mine(device))
          return;
        ir::Instruction in;
        in.kind = sending ? ir::InstrKind::Send : ir::InstrKind::Recv;
        in.op = sending ? "send" : m.add ? "recv-add" : "recv";
        in.peer = sending ? m.to : m.from;
        for (const ir::Box &box : m.boxes)
          in.slices.push_back(toMicrobatch(device, *to, box));
        in.bytes = sliceBytes(in.slices, *to);
        in.tag = tag;
        in.loc = loc;
        if (const int input = sending ? source.find(m.from) : -1; input >= 0)
          in.inputs.push_back(input);
        if (!sending)
          in.outputs.push_back(target.find(m.to));
        in.phase = phase_;
        programs_[device].body.push_back(std::move(in));
      };
      for (const Message &m : step.messages)
        message(m, true);
      for (const Message &m : step.messages)
        message(m, false);
    }
    source = target; // the intermediate result is the next step's source
  }
}

std::map<int, ir::DeviceProgram> specialize(const ir::Graph &graph, const LoweredPlan &plan, const LinkModel &links) {
  ProgramBuilder builder(graph, plan, links);
  builder.specialize();
  builder.addRecomputation();
  builder.addOptimizerStep();
  return builder.schedulePipeline();
}

} // namespace hspmd::passes
