// Specialize.cpp - specialize: DevicePrograms from a deduced graph.
#include "passes/Specialize.h"

#include "ir/Tags.h"
#include "passes/ShardingRules.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

namespace hspmd::passes {

namespace {

class Specializer {
public:
  Specializer(const ir::Graph &graph, const LoweredPlan &plan, const LinkModel &links)
      : graph_(graph), plan_(plan), links_(links) {}

  std::map<int, ir::DeviceProgram> run() {
    for (const auto &op : graph_.ops())
      for (const ir::Value *result : op->results)
        if (const auto &a = result->annotations.at(plan_.index))
          for (int d : a->devices())
            programs_[d].device = d;
    if (plan_.spec)
      if (auto b = plan_.spec->bindings.find("B"); b != plan_.spec->bindings.end())
        batch_ = b->second;
    for (auto &[d, program] : programs_) {
      program.plan = plan_.index;
      schedule(program);
    }
    for (const auto &[param, grad] : plan_.gradients)
      gradientValues_.insert(grad);
    for (const auto &op : graph_.ops())
      findBatchDims(*op);
    for (const auto &op : graph_.ops()) {
      phase_ = phaseOf(*op);
      emit(*op);
      if (phase_ == ir::Phase::Backward)
        for (const ir::Value *result : op->results) // rmsnorm_grad's second result is dw
          if (gradientValues_.count(result))
            accumulate(result);
    }
    addRecomputation();
    reportLoss();
    phase_ = ir::Phase::Update;
    for (const auto &[param, grad] : plan_.gradients)
      optimizerStep(*param, *grad);
    for (auto &[d, program] : programs_) {
      // Execution order: forward, backward (recomputation interleaved), update
      // (ir::expandSchedule repeats the first two per micro-batch).
      std::stable_sort(
          program.body.begin(), program.body.end(),
          [](const ir::Instruction &a, const ir::Instruction &b) { return ir::passOf(a.phase) < ir::passOf(b.phase); });
      stash(program);
    }
    return std::move(programs_);
  }

private:
  const ir::Graph &graph_;
  const LoweredPlan &plan_;
  const LinkModel &links_;
  std::map<int, ir::DeviceProgram> programs_;
  std::map<std::pair<int, const ir::Value *>, int> buffers_; // (device, value) -> buffer id
  std::map<const ir::Value *, std::map<int, int>> byValue_;  // value -> device -> buffer id
  ir::Phase phase_ = ir::Phase::Forward;                     // of the op being emitted
  int64_t batch_ = 0;                                        // the global batch B (0: unbound)
  std::set<int> recompute_;                                  // devices whose stage recomputes
  std::map<int, std::pair<size_t, size_t>> stageOf_;         // device -> (pipeline, stage)
  using Messages = std::set<std::tuple<int, int, int64_t>>;  // (from, to, tag)
  std::map<int, std::set<int>> perMicrobatch_;               // device -> buffers of batch-dependent values
  std::set<const ir::Value *> gradientValues_;               // the gradients the optimizer reads

  // Gradient synchronisation runs once per step, after every micro-batch; the backward ops
  // and the reshards of their results run in backward slots; everything else in forward ones.
  ir::Phase phaseOf(const ir::Op &op) const {
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
  void schedule(ir::DeviceProgram &program) {
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
  void remember(int device, const ir::Value *value, int id) {
    buffers_[{device, value}] = id;
    byValue_[value][device] = id;
  }

  const ir::Annotation *annotationOf(const ir::Value *v) const {
    const auto &a = v->annotations.at(plan_.index);
    return a ? &*a : nullptr;
  }

  // Global shapes, computed once per value.
  mutable std::unordered_map<const ir::Value *, std::vector<int64_t>> concrete_;
  const std::vector<int64_t> &concrete(const ir::Value &v) const {
    auto it = concrete_.find(&v);
    if (it == concrete_.end())
      it = concrete_.emplace(&v, ir::sizesWithUnboundAsOne(v.type.shape)).first;
    return it->second;
  }

  // The buffer of `value` on `device` (its local piece under `layout`).
  int buffer(int device, const ir::Value *value, const ir::Annotation &layout, const std::string &suffix = "") {
    auto key = std::make_pair(device, value);
    if (suffix.empty())
      if (auto it = buffers_.find(key); it != buffers_.end())
        return it->second;
    ir::DeviceProgram &program = programs_[device];
    ir::Buffer b;
    b.id = static_cast<int>(program.buffers.size());
    b.value = value->name + suffix;
    b.dtype = value->type.dtype;
    const auto pieces = ir::ownedRegion(layout, concrete(*value), device);
    if (!pieces.empty()) {
      const ir::Box box = toMicrobatch(device, *value, pieces[0].box);
      b.origin = box.lo;
      for (size_t d = 0; d < box.lo.size(); ++d)
        b.shape.push_back(box.hi[d] - box.lo[d]);
    }
    if (isBatchDependent(*value))
      perMicrobatch_[device].insert(b.id);
    program.buffers.push_back(b);
    if (suffix.empty())
      remember(device, value, b.id);
    return b.id;
  }

  // Which dimensions of each value grow with the batch: dimension 0 of the inputs, and every
  // result dimension made of a factor (ShardingRules) that makes up a batch dimension of an
  // operand. Parameters and their gradients have none.
  std::map<const ir::Value *, std::vector<bool>> batchDims_;
  void findBatchDims(const ir::Op &op) {
    if (batch_ <= 0 || op.kind == ir::OpKind::Param)
      return;
    if (op.kind == ir::OpKind::Input) {
      std::vector<bool> dims(op.result()->type.shape.size(), false);
      if (!dims.empty())
        dims[0] = true;
      batchDims_[op.result()] = dims;
      return;
    }
    if (op.kind == ir::OpKind::Reshard) {
      if (auto it = batchDims_.find(op.operands[0]); it != batchDims_.end())
        batchDims_[op.result()] = it->second;
      return;
    }
    const OpShardingRule rule = shardingRule(op);
    std::set<int> factors;
    for (size_t i = 0; i < op.operands.size() && i < rule.operands.size(); ++i)
      if (auto it = batchDims_.find(op.operands[i]); it != batchDims_.end())
        for (size_t d = 0; d < it->second.size() && d < rule.operands[i].size(); ++d)
          if (it->second[d])
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
        batchDims_[op.results[r]] = dims;
    }
  }
  bool isBatchDependent(const ir::Value &value) const { return batchDims_.count(&value) > 0; }

  // Global regions of batch-dependent values in micro-batch coordinates: one micro-batch of
  // a pipeline holding samples [P, P + n) of the batch covers [P, P + n / m). Devices of one
  // pipeline agree on them, so the slices of the messages between them do too.
  ir::Box toMicrobatch(int device, const ir::Value &value, ir::Box box) const {
    const ir::DeviceProgram &program = programs_.at(device);
    const int m = program.microbatches;
    if (m <= 1 || batch_ <= 0) // one micro-batch, or a batch the plan does not bind
      return box;
    const auto &sizes = concrete(value);
    const auto dims = batchDims_.find(&value);
    if (dims == batchDims_.end())
      return box;
    for (size_t d = 0; d < box.lo.size() && d < dims->second.size(); ++d) {
      if (!dims->second[d])
        continue;
      const int64_t perSample = sizes[d] / batch_; // elements of this dim per sample
      const int64_t from = program.batchStart * perSample;
      box.lo[d] = from + (box.lo[d] - from) / m;
      box.hi[d] = from + (box.hi[d] - from) / m;
    }
    return box;
  }

  int64_t sliceBytes(const std::vector<ir::Box> &slices, const ir::Value &value) const {
    int64_t n = 0;
    for (const ir::Box &box : slices)
      n += box.numElements();
    return n * ir::dtypeBytes(value.type.dtype);
  }

  void emit(const ir::Op &op) {
    const ir::Annotation *out = annotationOf(op.result());
    if (!out)
      return;
    if (op.kind == ir::OpKind::Param || op.kind == ir::OpKind::Input) {
      for (int d : out->devices())
        programs_[d].buffers[static_cast<size_t>(buffer(d, op.result(), *out))].role =
            op.kind == ir::OpKind::Param ? ir::BufferRole::Parameter : ir::BufferRole::Input;
      return;
    }
    if (op.kind == ir::OpKind::Reshard) {
      if (ir::intAttr(op.attrs, "plan", -1) != plan_.index) {
        for (int d : out->devices()) // another plan's reshard: the same buffer
          if (auto it = buffers_.find({d, op.operands[0]}); it != buffers_.end())
            remember(d, op.result(), it->second);
        return;
      }
      reshard(op);
      return;
    }
    for (int d : out->devices()) {
      ir::Instruction in;
      in.kind = ir::InstrKind::Kernel;
      in.op = std::string(ir::opInfo(op.kind).name);
      in.attrs = op.attrs;
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
  void localize(const ir::Op &op, int d, ir::Instruction &in) {
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
  void vocabParallel(const ir::Op &op, int d, ir::Instruction &in) {
    const ir::Value *logits = op.operands[0];
    const ir::Annotation &layout = *annotationOf(logits);
    const auto &shape = concrete(*logits);
    const auto mine = ir::ownedRegion(layout, shape, d);
    if (mine.empty() || shape.empty() || mine[0].box.hi.back() - mine[0].box.lo.back() == shape.back())
      return;
    in.attrs["vocab_offset"] = mine[0].box.lo.back();
    for (int e : layout.devices()) {
      const auto theirs = ir::ownedRegion(layout, shape, e);
      if (theirs.empty() || theirs[0].replica != mine[0].replica)
        continue;
      bool sameRows = true;
      for (size_t dim = 0; dim + 1 < shape.size(); ++dim)
        sameRows =
            sameRows && theirs[0].box.lo[dim] == mine[0].box.lo[dim] && theirs[0].box.hi[dim] == mine[0].box.hi[dim];
      if (sameRows)
        in.group.push_back(e);
    }
    std::sort(in.group.begin(), in.group.end());
    in.tag = ir::tags::crossEntropy(op.id);
  }

  // A reshard op: the steps resolve-communication chose for it (planned here only when its
  // shape was not bound then).
  void reshard(const ir::Op &op) {
    const ir::Annotation &from = *annotationOf(op.operands[0]), &to = *annotationOf(op.result());
    auto resolved = plan_.communication.find(&op);
    const CommPlan comm = resolved != plan_.communication.end() ? resolved->second : planFor(from, op.result(), to);
    lowerSteps(
        comm, byValue_[op.operands[0]], op.result(), [&](size_t s) { return ir::tags::reshardStep(op.id, s); }, op.loc);
  }

  CommPlan planFor(const ir::Annotation &from, const ir::Value *to, const ir::Annotation &toLayout) {
    return planReshard(concrete(*to), ir::dtypeBytes(to->type.dtype), from, toLayout, links_);
  }

  // One device of each replica group of the model's output reports its part of the loss.
  void reportLoss() {
    if (graph_.outputs.empty())
      return;
    const ir::Value *loss = graph_.outputs[0];
    const ir::Annotation *layout = annotationOf(loss);
    if (!layout)
      return;
    for (int d : layout->devices()) {
      auto it = buffers_.find({d, loss});
      auto pieces = ir::ownedRegion(*layout, concrete(*loss), d);
      if (it != buffers_.end() && !pieces.empty() && pieces[0].replica == 0)
        programs_[d].lossBuffer = it->second;
    }
  }

  // With several micro-batches, each backward pass adds its part of a parameter's gradient
  // to an accumulator (zero at the start of the step); the synchronisation and the optimizer
  // read the accumulator.
  void accumulate(const ir::Value *grad) {
    const ir::Annotation *layout = annotationOf(grad);
    if (!layout)
      return;
    for (int d : layout->devices()) {
      auto it = buffers_.find({d, grad});
      if (programs_[d].microbatches <= 1 || it == buffers_.end())
        continue;
      const int partial = it->second;
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

  // A recomputing stage keeps only what its forward pass received from other stages (and
  // its inputs) and the input of each layer of its stack between the forward and the
  // backward pass of a micro-batch: the backward pass runs again, into fresh buffers, the
  // forward kernels, copies, collectives and messages inside the stage (context
  // parallelism's keys and values) whose results it reads (transitively), each layer's just
  // before its backward; a message is sent again where its data is next needed.
  //
  // Members of a collective must agree on repeating it: a collective that some member would
  // not repeat (it needs none of its result) is repeated by none, its result kept from the
  // forward pass instead. A message is received again only if its sender recomputes too.
  void addRecomputation() {
    std::set<int64_t> keptTags; // collectives whose results are kept on every member
    Messages keptMessages;      // messages inside a stage whose data the receiver keeps
    Messages repeatedSends;     // messages inside a stage the sender sends again
    std::map<int, std::vector<bool>> again;
    for (int round = 0;; ++round) {
      // (collective tag, group) -> devices repeating it; groups of one op (the tensor-parallel
      // groups of a layer) share its tag
      std::map<std::pair<int64_t, std::vector<int>>, std::set<int>> repeaters;
      Messages repeatedRecvs;
      for (auto &[d, program] : programs_) {
        if (!recompute_.count(d))
          continue;
        again[d] = recomputed(program, keptTags, keptMessages, repeatedSends);
        for (size_t i = 0; i < program.body.size(); ++i) {
          if (!again[d][i])
            continue;
          const ir::Instruction &in = program.body[i];
          if (!in.group.empty())
            repeaters[{in.tag, in.group}].insert(d);
          else if (in.kind == ir::InstrKind::Recv) {
            repeatedRecvs.insert({in.peer, d, in.tag});
          }
        }
      }
      bool changed = false;
      for (const auto &[key, devices] : repeaters)
        if (devices != std::set<int>(key.second.begin(), key.second.end()))
          changed = keptTags.insert(key.first).second || changed;
      // A message is received again only when its sender recomputes and sends it again.
      Messages sends;
      for (const auto &message : repeatedRecvs)
        if (recompute_.count(std::get<0>(message)))
          sends.insert(message);
        else
          changed = keptMessages.insert(message).second || changed;
      if (round >= 16) { // no agreement: every message's data is kept, as before
        for (const auto &message : repeatedRecvs)
          changed = keptMessages.insert(message).second || changed;
        sends.clear();
      }
      changed = changed || sends != repeatedSends;
      repeatedSends = std::move(sends);
      if (!changed)
        break;
    }
    for (auto &[d, program] : programs_)
      if (recompute_.count(d))
        addRecompute(program, again[d]);
  }

  bool sameStage(int a, int b) const {
    auto x = stageOf_.find(a), y = stageOf_.find(b);
    return x != stageOf_.end() && y != stageOf_.end() && x->second == y->second;
  }

  // Which forward instructions of `program` its backward passes repeat; the results of the
  // collectives tagged `keptTags` are kept instead. Messages between devices of one stage
  // (context parallelism's keys and values) are received again, unless `keptMessages` keeps
  // their data; the sends of `repeatedSends` are sent again. Messages between stages are not
  // repeated: what a stage receives is its checkpoint.
  std::vector<bool> recomputed(const ir::DeviceProgram &program, const std::set<int64_t> &keptTags,
                               const Messages &keptMessages, const Messages &repeatedSends) {
    std::set<int> received, needed;
    const int me = program.device;
    for (const ir::Instruction &in : program.body)
      if (in.phase == ir::Phase::Forward &&
          ((in.kind == ir::InstrKind::Recv && (!sameStage(in.peer, me) || keptMessages.count({in.peer, me, in.tag}))) ||
           (!in.group.empty() && keptTags.count(in.tag))))
        received.insert(in.outputs.begin(), in.outputs.end());
    // Layer checkpoints: a forward instruction belongs to the highest layer of the stack
    // whose parameters it reads, directly or through its inputs; a buffer one layer writes
    // and a later layer reads is kept.
    std::map<int, int> layerOf; // buffer -> layer of its writer (-1: before the stack)
    for (const ir::Buffer &b : program.buffers) {
      const auto open = b.value.find('[');
      if (b.role == ir::BufferRole::Parameter && open != std::string::npos && open > 0 &&
          std::isdigit(static_cast<unsigned char>(b.value[open + 1])))
        layerOf[b.id] = std::stoi(b.value.substr(open + 1));
    }
    for (const ir::Instruction &in : program.body) {
      // What a device of the same stage sends belongs to the sender's layer, which this
      // program does not see: no layer (head parallelism's attention output, received by a
      // device that holds no heads, is received again rather than kept).
      if (in.phase != ir::Phase::Forward || (in.kind == ir::InstrKind::Recv && sameStage(in.peer, me)))
        continue;
      int layer = -1;
      for (int b : in.inputs)
        if (auto it = layerOf.find(b); it != layerOf.end())
          layer = std::max(layer, it->second);
      for (int b : in.inputs)
        if (auto it = layerOf.find(b); it != layerOf.end() && it->second < layer &&
                                       program.buffers[static_cast<size_t>(b)].role == ir::BufferRole::Temporary)
          received.insert(b);
      for (int b : in.outputs)
        layerOf.emplace(b, layer);
    }
    // A kept buffer that a collective makes from other kept buffers (the reduced form of a
    // residual stream kept as partial sums) is made again instead: one form per layer is kept.
    for (const ir::Instruction &in : program.body)
      if (in.phase == ir::Phase::Forward && in.kind == ir::InstrKind::Collective && !in.inputs.empty() &&
          !keptTags.count(in.tag) &&
          std::all_of(in.inputs.begin(), in.inputs.end(), [&](int b) { return received.count(b) > 0; }) &&
          std::all_of(in.outputs.begin(), in.outputs.end(), [&](int b) { return received.count(b) > 0; }))
        for (int b : in.outputs)
          received.erase(b);
    for (const ir::Instruction &in : program.body)
      if (in.phase == ir::Phase::Backward)
        needed.insert(in.inputs.begin(), in.inputs.end());
    std::vector<bool> keep(program.body.size(), false);
    for (size_t i = program.body.size(); i-- > 0;) {
      const ir::Instruction &in = program.body[i];
      if (in.phase != ir::Phase::Forward)
        continue;
      if (in.kind == ir::InstrKind::Send) {
        if (repeatedSends.count({me, in.peer, in.tag})) {
          keep[i] = true;
          needed.insert(in.inputs.begin(), in.inputs.end());
        }
        continue;
      }
      if (std::any_of(in.outputs.begin(), in.outputs.end(), [&](int b) { return received.count(b); }) ||
          std::none_of(in.outputs.begin(), in.outputs.end(), [&](int b) { return needed.count(b); }))
        continue;
      keep[i] = true;
      needed.insert(in.inputs.begin(), in.inputs.end());
    }
    return keep;
  }

  void addRecompute(ir::DeviceProgram &program, const std::vector<bool> &keep) {
    std::map<int, int> fresh; // forward buffer -> its recomputed copy
    std::vector<ir::Instruction> again;
    for (size_t i = 0; i < program.body.size(); ++i) {
      if (!keep[i])
        continue;
      ir::Instruction in = program.body[i];
      for (int &b : in.inputs)
        if (auto it = fresh.find(b); it != fresh.end())
          b = it->second;
      for (int &b : in.outputs) {
        if (!fresh.count(b)) {
          ir::Buffer copy = program.buffers[static_cast<size_t>(b)];
          copy.id = static_cast<int>(program.buffers.size());
          copy.value += ".recompute";
          program.buffers.push_back(copy);
          if (perMicrobatch_[program.device].count(b))
            perMicrobatch_[program.device].insert(copy.id);
          fresh[b] = copy.id;
        }
        b = fresh.at(b);
      }
      in.phase = ir::Phase::Recompute;
      again.push_back(std::move(in));
    }
    for (ir::Instruction &in : program.body)
      if (in.phase == ir::Phase::Backward)
        for (int &b : in.inputs)
          if (auto it = fresh.find(b); it != fresh.end())
            b = it->second;
    // Each recomputed instruction goes just before the first backward instruction that reads
    // it, directly or through later recomputed ones: a layer's forward runs again right
    // before its backward, and its buffers die with it.
    const size_t n = program.body.size();
    size_t firstBackward = n;
    std::map<int, size_t> firstReader; // recomputed buffer -> first backward reader
    for (size_t i = 0; i < n; ++i) {
      const ir::Instruction &in = program.body[i];
      if (in.phase != ir::Phase::Backward)
        continue;
      firstBackward = std::min(firstBackward, i);
      for (int b : in.inputs)
        firstReader.emplace(b, i);
    }
    std::vector<size_t> deadline(again.size(), firstBackward);
    std::map<int, size_t> needBy; // recomputed buffer -> the earliest deadline of its readers
    for (size_t j = again.size(); j-- > 0;) {
      if (again[j].kind == ir::InstrKind::Send)
        continue; // below, once every other reader of its data is placed
      size_t due = n;
      for (int b : again[j].outputs) {
        if (auto it = firstReader.find(b); it != firstReader.end())
          due = std::min(due, it->second);
        if (auto it = needBy.find(b); it != needBy.end())
          due = std::min(due, it->second);
      }
      deadline[j] = due < n ? due : firstBackward;
      for (int b : again[j].inputs)
        needBy[b] = needBy.count(b) ? std::min(needBy[b], deadline[j]) : deadline[j];
    }
    // A message is sent again where its data is next needed here (the sender's own use of
    // its keys and values): the receiver needs it at the same point of its own backward.
    for (size_t j = 0; j < again.size(); ++j)
      if (again[j].kind == ir::InstrKind::Send)
        for (int b : again[j].inputs)
          if (auto it = needBy.find(b); it != needBy.end())
            deadline[j] = it->second;
    std::vector<ir::Instruction> body;
    for (size_t i = 0; i <= n; ++i) {
      for (size_t j = 0; j < again.size(); ++j)
        if (deadline[j] == i)
          body.push_back(again[j]);
      if (i < n)
        body.push_back(std::move(program.body[i]));
    }
    program.body = std::move(body);
  }

  // Values a forward pass produces (or loads: the inputs) and a later backward pass of the
  // same micro-batch reads get one copy per micro-batch in flight on the device.
  void stash(ir::DeviceProgram &program) {
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

  // After the gradients are synchronised, each device holding a parameter (or, under `zero`,
  // its share of the optimizer state) updates it: AdamW with its two moment buffers, or SGD.
  // Under `zero` each device updates its share, and an all-gather brings the updated shares
  // back into the parameter's layout.
  void optimizerStep(const ir::Value &param, const ir::Value &grad) {
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
    std::map<int, int> updated; // device -> the buffer holding its updated share
    for (int d : where.devices()) {
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
      else if (plan_.spec && plan_.spec->optimizerArgs.count("momentum") &&
               plan_.spec->optimizerArgs.at("momentum") != 0)
        moments = {".momentum"};
      for (const char *name : moments) {
        in.inputs.push_back(buffer(d, &param, where, name));
        programs_[d].buffers[static_cast<size_t>(in.inputs.back())].role = ir::BufferRole::State;
      }
      if (plan_.spec)
        for (const auto &[name, value] : plan_.spec->optimizerArgs)
          in.attrs[name] = value;
      in.outputs = {target};
      updated[d] = target;
      programs_[d].body.push_back(std::move(in));
    }
    if (sharded)
      lowerSteps(
          planFor(where, &param, *layout), updated, &param,
          [&](size_t s) { return ir::tags::zeroGather(param.def ? param.def->id : 0, s); },
          param.def ? param.def->loc : ir::Location{});
  }

  // Moves a value (held in `source`'s buffers) into `to`'s buffers, as the steps of its
  // communication plan.
  void lowerSteps(const CommPlan &comm, std::map<int, int> source, const ir::Value *to,
                  const std::function<int64_t(size_t)> &tagOf, const ir::Location &loc) {
    const auto &shape = concrete(*to);
    for (size_t s = 0; s < comm.steps.size(); ++s) {
      const CommStep &step = comm.steps[s];
      const bool last = s + 1 == comm.steps.size();
      const std::string suffix = last ? "" : ".step" + std::to_string(s);
      const int64_t tag = tagOf(s);
      const bool collective = step.kind == CommKind::AllReduce || step.kind == CommKind::ReduceScatter ||
                              step.kind == CommKind::AllGather || step.kind == CommKind::AllToAll ||
                              step.kind == CommKind::SplitAllReduce || step.kind == CommKind::SplitReduceScatter ||
                              step.kind == CommKind::SplitAllGather;
      std::set<int> involved;
      for (int d : step.to.devices())
        involved.insert(d);
      std::map<int, int> target;
      for (int d : involved)
        target[d] = buffer(d, to, step.to, suffix);
      // A collective writes its members' whole outputs (each element the sum, or the copy,
      // of the members' inputs that hold it), own part included; devices outside its groups
      // copy their own part. Before a batched send/receive each device copies its own part
      // first, and receives then land on (or add to) it.
      std::set<int> members;
      if (collective)
        for (const auto &group : step.groups)
          members.insert(group.begin(), group.end());
      // Targets start from zero where something adds to them or leaves part of them unwritten
      // (a partial sum's other copies hold zeros).
      std::map<int, int64_t> written;
      std::set<int> adds;
      for (const LocalCopy &copy : step.local) {
        written[copy.device] += copy.box.numElements();
        if (copy.add)
          adds.insert(copy.device);
      }
      for (const Message &m : step.messages) {
        for (const ir::Box &box : m.boxes)
          written[m.to] += box.numElements();
        if (m.add)
          adds.insert(m.to);
      }
      for (const auto &[d, buffer] : target) {
        if (members.count(d))
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
        if (source.count(copy.device) && target.count(copy.device) && !members.count(copy.device)) {
          ir::Instruction in;
          in.kind = ir::InstrKind::Copy;
          in.op = copy.add ? "copy-add" : "copy";
          in.slices = {toMicrobatch(copy.device, *to, copy.box)};
          in.inputs.push_back(source.at(copy.device));
          in.outputs.push_back(target.at(copy.device));
          in.loc = loc;
          in.phase = phase_;
          programs_[copy.device].body.push_back(std::move(in));
        }
      if (collective) {
        for (const auto &group : step.groups)
          for (int d : group) {
            ir::Instruction in;
            in.kind = ir::InstrKind::Collective;
            in.op = std::string(commKindName(step.kind));
            in.group = group;
            in.tag = tag;
            in.loc = loc;
            in.bytes = step.bytesReceived.count(d) ? step.bytesReceived.at(d) : 0;
            if (isBatchDependent(*to))
              in.bytes /= programs_[d].microbatches;
            if (source.count(d))
              in.inputs.push_back(source.at(d));
            if (target.count(d))
              in.outputs.push_back(target.at(d));
            if (auto held = ir::ownedRegion(step.from, shape, d); !held.empty())
              in.partial = held[0].partial;
            in.phase = phase_;
            programs_[d].body.push_back(std::move(in));
            involved.erase(d);
          }
      } else {
        // Batched send/receive: every device posts its sends, then its receives, peers in
        // increasing order: one grouped call per device and step.
        auto message = [&](const Message &m, bool sending) {
          const int device = sending ? m.from : m.to;
          ir::Instruction in;
          in.kind = sending ? ir::InstrKind::Send : ir::InstrKind::Recv;
          in.op = sending ? "send" : m.add ? "recv-add" : "recv";
          in.peer = sending ? m.to : m.from;
          for (const ir::Box &box : m.boxes)
            in.slices.push_back(toMicrobatch(device, *to, box));
          in.bytes = sliceBytes(in.slices, *to);
          in.tag = tag;
          in.loc = loc;
          if (sending && source.count(m.from))
            in.inputs.push_back(source.at(m.from));
          if (!sending)
            in.outputs.push_back(target.at(m.to));
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
};

} // namespace

std::map<int, ir::DeviceProgram> specialize(const ir::Graph &graph, const LoweredPlan &plan, const LinkModel &links) {
  return Specializer(graph, plan, links).run();
}

} // namespace hspmd::passes
