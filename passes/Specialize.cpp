// Specialize.cpp - specialize: DevicePrograms from a deduced graph.
#include "passes/Specialize.h"

#include <algorithm>
#include <set>

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
    for (auto &[d, program] : programs_) {
      program.plan = plan_.index;
      schedule(program);
    }
    for (const auto &op : graph_.ops()) {
      phase_ = phaseOf(*op);
      emit(*op);
    }
    phase_ = ir::Phase::Update;
    for (const auto &[param, grad] : plan_.gradients)
      optimizerStep(*param, *grad);
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

  // Gradient synchronisation runs once per step, after every micro-batch; the backward ops
  // and the reshards of their results run in backward slots; everything else in forward ones.
  ir::Phase phaseOf(const ir::Op &op) const {
    const ir::Op *source = &op;
    if (op.kind == ir::OpKind::Reshard) {
      const std::string &name = op.result()->name;
      if (name.size() > 7 && name.compare(name.size() - 7, 7, ".synced") == 0)
        return ir::Phase::Update;
      while (source->kind == ir::OpKind::Reshard && source->operands[0]->def)
        source = source->operands[0]->def;
    }
    return plan_.backwardOps.count(source) ? ir::Phase::Backward : ir::Phase::Forward;
  }

  // The device's stage in its pipeline and the pass order over its micro-batches.
  void schedule(ir::DeviceProgram &program) const {
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
        program.microbatches = static_cast<int>(std::max<int64_t>(1, pipeline.microbatches));
        if (p < plan_.batchPerPipeline.size())
          program.microbatchSize = plan_.batchPerPipeline[p] / program.microbatches;
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

  static std::vector<int64_t> concrete(const ir::Value &v) { return ir::sizesWithUnboundAsOne(v.type.shape); }

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
    for (const auto &piece : ir::ownedRegion(layout, concrete(*value), device))
      for (size_t d = 0; d < piece.box.lo.size(); ++d)
        b.shape.push_back(piece.box.hi[d] - piece.box.lo[d]);
    program.buffers.push_back(b);
    if (suffix.empty())
      remember(device, value, b.id);
    return b.id;
  }

  void emit(const ir::Op &op) {
    const ir::Annotation *out = annotationOf(op.result());
    if (!out)
      return;
    if (op.kind == ir::OpKind::Param || op.kind == ir::OpKind::Input) {
      for (int d : out->devices())
        buffer(d, op.result(), *out);
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
    }
    if (op.kind == ir::OpKind::EmbeddingGrad || op.kind == ir::OpKind::Embedding) {
      in.attrs["vocab_offset"] = lo(op.kind == ir::OpKind::Embedding ? op.operands[0] : op.result(), 0);
    }
  }

  void reshard(const ir::Op &op) {
    reshardValue(*annotationOf(op.operands[0]), byValue_[op.operands[0]], op.result(), *annotationOf(op.result()),
                 static_cast<int64_t>(op.id) * 64, op.loc);
  }

  // After the gradients are synchronised, each device holding a parameter (or, under `zero`,
  // its share of the optimizer state) updates it: AdamW with its two moment buffers, or SGD.
  // Under `zero` each device updates its share, and an all-gather brings the updated shares
  // back into the parameter's layout.
  void optimizerStep(const ir::Value &param, const ir::Value &grad) {
    const ir::Annotation *layout = annotationOf(&param);
    const ir::Value *synced = graph_.findValue(grad.name + ".synced");
    if (!synced)
      synced = &grad;
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
      in.inputs = {target, buffer(d, synced, *gradLayout)};
      if (optimizer == "adamw")
        for (const char *moment : {".adam_m", ".adam_v"})
          in.inputs.push_back(buffer(d, &param, where, moment));
      if (plan_.spec)
        for (const auto &[name, value] : plan_.spec->optimizerArgs)
          in.attrs[name] = value;
      in.outputs = {target};
      updated[d] = target;
      programs_[d].body.push_back(std::move(in));
    }
    if (sharded)
      reshardValue(where, updated, &param, *layout, static_cast<int64_t>(param.def ? param.def->id : 0) * 64 + 63,
                   param.def ? param.def->loc : ir::Location{});
  }

  // Moves a value (held in `source`'s buffers under layout `fromLayout`) into `to`'s buffers
  // under `toLayout`, as the steps of its communication plan.
  void reshardValue(const ir::Annotation &fromLayout, std::map<int, int> source, const ir::Value *to,
                    const ir::Annotation &toLayout, int64_t baseTag, const ir::Location &loc) {
    const auto shape = concrete(*to);
    CommPlan comm = planReshard(shape, ir::dtypeBytes(to->type.dtype), fromLayout, toLayout, links_);
    for (size_t s = 0; s < comm.steps.size(); ++s) {
      const CommStep &step = comm.steps[s];
      const bool last = s + 1 == comm.steps.size();
      const std::string suffix = last ? "" : ".step" + std::to_string(s);
      const int64_t tag = baseTag + static_cast<int64_t>(s);
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
      // A device's own part first: receives (and reductions) then land on top of it.
      for (const LocalCopy &copy : step.local)
        if (source.count(copy.device) && target.count(copy.device)) {
          ir::Instruction in;
          in.kind = ir::InstrKind::Copy;
          in.op = copy.add ? "copy-add" : "copy";
          in.inputs.push_back(source.at(copy.device));
          in.outputs.push_back(target.at(copy.device));
          in.loc = loc;
          in.phase = phase_;
          programs_[copy.device].body.push_back(in);
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
            if (source.count(d))
              in.inputs.push_back(source.at(d));
            if (target.count(d))
              in.outputs.push_back(target.at(d));
            in.phase = phase_;
            programs_[d].body.push_back(in);
            involved.erase(d);
          }
      } else {
        // Batched send/receive: every device posts its sends, then its receives, peers in
        // increasing order: one grouped call per device and step.
        for (const Message &m : step.messages) {
          ir::Instruction send;
          send.kind = ir::InstrKind::Send;
          send.op = "send";
          send.peer = m.to;
          send.bytes = m.bytes;
          send.tag = tag;
          send.loc = loc;
          if (source.count(m.from))
            send.inputs.push_back(source.at(m.from));
          send.phase = phase_;
          programs_[m.from].body.push_back(send);
        }
        for (const Message &m : step.messages) {
          ir::Instruction recv;
          recv.kind = ir::InstrKind::Recv;
          recv.op = m.add ? "recv-add" : "recv";
          recv.peer = m.from;
          recv.bytes = m.bytes;
          recv.tag = tag;
          recv.loc = loc;
          recv.outputs.push_back(target.at(m.to));
          recv.phase = phase_;
          programs_[m.to].body.push_back(recv);
        }
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
