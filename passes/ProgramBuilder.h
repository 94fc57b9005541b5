// ProgramBuilder.h - the DevicePrograms of one plan while the program passes build them, in
// the order passes/Pipeline.cpp runs them:
//
//   specialize         (Specialize.cpp) each device's ops with local shapes and offsets, each
//                      reshard lowered to the steps resolve-communication chose, each
//                      gradient accumulated over micro-batches, the pipeline stage and
//                      schedule of each device, and which device reports the loss
//   recompute          (Recompute.cpp) stages with `recompute` run their forward again in
//                      each backward pass
//   optimizer-step     (OptimizerStep.cpp) AdamW or SGD per parameter; under `zero` on each
//                      device's share, then the steps that rebuild the parameter
//   schedule-pipeline  (SchedulePipeline.cpp) instructions in execution order, and a copy
//                      per micro-batch in flight of what a backward pass reads
//
// One class whose methods live in those four files: the passes share its maps from values
// to each device's buffers.
#pragma once

#include "ir/DeviceProgram.h"
#include "passes/Communication.h"
#include "passes/LoweredPlan.h"
#include "passes/ShardingRules.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

namespace hspmd::passes {

class ProgramBuilder {
public:
  /// `threads`: for the per-device work of specialize, recompute and schedule-pipeline
  /// (PipelineOptions::threads). `bf16`: PipelineOptions::bf16.
  ProgramBuilder(const ir::Graph &graph, const LoweredPlan &plan, const LinkModel &links, int threads = 1,
                 bool bf16 = false)
      : graph_(graph), plan_(plan), links_(links), threads_(threads), bf16_(bf16), reshardPlans_(links_) {}

  /// The specialize pass.
  void specialize();
  /// The recompute pass.
  void addRecomputation();
  /// The optimizer-step pass.
  void addOptimizerStep();
  /// The schedule-pipeline pass: the programs are then complete, and handed over.
  std::map<int, ir::DeviceProgram> schedulePipeline();

  /// The programs so far (for --after), the optimizer's instructions after each body's.
  std::map<int, ir::DeviceProgram> programs() const;
  /// Whether specialize stamps ops alike (PipelineOptions::stamp); before specialize.
  void stampAlike(bool on) { stampAlike_ = on; }
  /// Specialize's ops (those it could stamp) on each part's devices, and how many it stamped.
  size_t stampedOps() const { return stamped_; }
  size_t stampableOps() const { return stampable_; }
  /// The same for optimizer-step's parameter updates.
  size_t stampedUpdates() const { return stampedUpdates_; }
  size_t stampableUpdates() const { return stampableUpdates_; }

private:
  const ir::Graph &graph_;
  const LoweredPlan &plan_;
  const LinkModel &links_;
  const int threads_;
  const bool bf16_;
  ReshardPlans reshardPlans_; // planFor's answers, by question
  std::map<int, ir::DeviceProgram> programs_;
  // optimizer-step's instructions, per device, to follow its body: schedule-pipeline appends
  // them where the body is in pass order with room for them (specialize and recompute
  // reserve it), and joins them as it orders the body otherwise. (Appended to the body here,
  // each body of thousands of instructions was moved into a new allocation twice its size.)
  std::map<int, std::vector<ir::Instruction>> updates_;
  // Buffers by device, for the steps of one move (lowerSteps): (device, buffer id) pairs in
  // device order.
  class DeviceBuffers {
  public:
    DeviceBuffers() = default;
    explicit DeviceBuffers(std::vector<std::pair<int, int>> entries) : entries_(std::move(entries)) {
      std::sort(entries_.begin(), entries_.end());
    }
    /// The buffer on `device`, or -1.
    int find(int device) const {
      auto it = std::lower_bound(entries_.begin(), entries_.end(), std::pair{device, INT_MIN});
      return it != entries_.end() && it->first == device ? it->second : -1;
    }
    void set(int device, int id) {
      auto it = std::lower_bound(entries_.begin(), entries_.end(), std::pair{device, INT_MIN});
      if (it != entries_.end() && it->first == device)
        it->second = id;
      else
        entries_.insert(it, {device, id});
    }
    auto begin() const { return entries_.begin(); }
    auto end() const { return entries_.end(); }

  private:
    std::vector<std::pair<int, int>> entries_;
  };
  // Which buffer holds each value on each device: device -> value id -> buffer id (-1: none),
  // a device's table made when it first holds something. Hashed (device, value) keys and a map
  // per value cost a node per entry (half a million entries at 32B x 48 devices: their
  // lookups, insertions and destruction were 15% of compiling).
  std::vector<std::vector<int>> heldOn_;
  // The buffer of `value` on `device` so far, or -1.
  int heldBuffer(int device, const ir::Value *value) const {
    const auto d = static_cast<size_t>(device), v = static_cast<size_t>(value->id);
    return d < heldOn_.size() && v < heldOn_[d].size() ? heldOn_[d][v] : -1;
  }
  // The buffers of `value` on the devices of `layout` that hold it.
  DeviceBuffers heldBuffers(const ir::Value *value, const ir::Annotation &layout) const;
  ir::Phase phase_ = ir::Phase::Forward;                    // of the op being emitted
  int64_t batch_ = 0;                                       // the global batch B (0: unbound)
  std::set<int> recompute_;                                 // devices whose stage recomputes
  std::map<int, std::pair<size_t, size_t>> stageOf_;        // device -> (pipeline, stage)
  std::map<int, size_t> valuesOn_;                          // device -> how many values it holds
  using Messages = std::set<std::tuple<int, int, int64_t>>; // (from, to, tag)
  // device -> which of its buffers (by id) hold batch-dependent values
  std::map<int, std::vector<char>> perMicrobatch_;
  std::set<const ir::Value *> gradientValues_; // the gradients the optimizer reads
  // Global shapes, computed once per value.
  mutable std::vector<std::optional<std::vector<int64_t>>> concrete_; // by value id
  // Which dimensions of each value grow with the batch: dimension 0 of the inputs, and every
  // result dimension made of a factor (ShardingRules) that makes up a batch dimension of an
  // operand. Parameters and their gradients have none.
  // Shared by specialize's parts.
  // By value id; none for a value that does not grow with the batch.
  std::shared_ptr<std::vector<std::optional<std::vector<bool>>>> batchDims_ =
      std::make_shared<std::vector<std::optional<std::vector<bool>>>>();
  const std::optional<std::vector<bool>> &batchDimsOf(const ir::Value &value) const {
    static const std::optional<std::vector<bool>> none;
    const auto id = static_cast<size_t>(value.id);
    return id < batchDims_->size() ? (*batchDims_)[id] : none;
  }

  // Each op's attributes (by op id) for its instructions to share; localize copies them for
  // the instructions whose attributes depend on the device. Shared by specialize's parts.
  std::shared_ptr<std::vector<ir::SharedAttrs>> opAttrs_ = std::make_shared<std::vector<ir::SharedAttrs>>();
  ir::SharedAttrs opAttr(const ir::Op &op) const {
    const auto id = static_cast<size_t>(op.id);
    return id < opAttrs_->size() ? (*opAttrs_)[id] : ir::SharedAttrs(op.attrs);
  }

  // Specialize.cpp
  // The devices this builder emits for, by device id (empty: all): specialize splits the
  // devices over parts, each a builder of its own on a thread of its own.
  std::vector<char> mine_;
  bool mine(int d) const {
    return mine_.empty() || (static_cast<size_t>(d) < mine_.size() && mine_[static_cast<size_t>(d)]);
  }
  void prepare();
  void analyse();
  void emitAll();
  // Stamping. Ops that emit alike (emitsAlike: the ops of identical layers) form a class; on
  // each device the first op of a class is emitted, and each later one is stamped from it:
  // its instructions and buffers copied, renamed after the later op's values, buffer ids and
  // tags renumbered, location its own. Emitting each op of 64 identical layers again on each
  // device was most of specialize.
  // By op id: the op's class, or -1 (always emitted). Shared by specialize's parts.
  std::shared_ptr<std::vector<int>> opClass_ = std::make_shared<std::vector<int>>();
  void classifyOps();
  // The classes' buckets: an FNV-1a hash of what a class is compared by, word by word.
  static constexpr uint64_t kHashStart = 0xcbf29ce484222325ULL;
  static void mix(uint64_t &h, uint64_t x) { h = (h ^ x) * 0x100000001b3ULL; }
  bool emitsAlike(const ir::Op &a, const ir::Op &b) const;
  // What is stamped: an op (its operands in, its results out), or a parameter's update (the
  // parameter and its gradient in). Tags are the anchor op's (ir/Tags.h), locations the unit's.
  struct StampUnit {
    int anchor = 0;
    ir::Location loc;
    std::vector<const ir::Value *> inputs, outputs;
  };
  static StampUnit unitOf(const ir::Op &op);
  // What the first unit of a class emitted on one of this builder's devices: the instructions
  // [body0, body1) and buffers [buf0, buf1) of its program, and which buffers held the unit's
  // inputs before (-1: none).
  struct StampedDevice {
    int device = 0;
    ir::DeviceProgram *program = nullptr;
    size_t body0 = 0, body1 = 0, buf0 = 0, buf1 = 0;
    std::vector<int> held;
  };
  struct Stamp {
    bool recorded = false; // the first unit of the class has been emitted
    bool usable = false;   // what it emitted can be copied (checked once, as recorded)
    StampUnit unit;
    std::vector<StampedDevice> devices;
  };
  std::vector<Stamp> stamps_; // by class
  bool stampAlike_ = true;
  size_t stamped_ = 0, stampable_ = 0;
  // Device -> buffer id -> the value the buffer was made for, while stamping.
  std::vector<std::vector<const ir::Value *>> madeFor_;
  // This builder's devices and their programs, while stamping.
  std::vector<std::pair<int, ir::DeviceProgram *>> emitting_;
  void startStamping(size_t classes);
  void stopStamping();
  // Emits `unit` of class `c` (-1: none) by stamping it from its class's first, or by
  // `emitIt` (recording it where it is the first); true where stamped.
  bool emitStamped(int c, const StampUnit &unit, const std::function<void()> &emitIt);
  // The devices' body and buffer counts and inputs' buffers before `unit` is emitted.
  std::vector<StampedDevice> beforeEmitting(const StampUnit &unit) const;
  // Keeps what `unit` emitted (since `before`) as its class's stamp.
  void record(StampUnit unit, std::vector<StampedDevice> before, Stamp &stamp);
  // Emits `unit` as a copy of `stamp`'s unit's emission; false (and nothing emitted) where an
  // input is held differently than it was.
  bool stampFrom(const StampUnit &unit, const Stamp &stamp);
  // Specialize's and optimizer-step's parts: a builder per thread for `devices` (programs_'s)
  // round-robin, so that each gets devices of every stage, each sharing this one's analysis.
  std::vector<std::unique_ptr<ProgramBuilder>> makeParts(size_t parts, const std::vector<int> &devices) const;
  // Moves a device's program, buffer table and batch-dependent buffers between builders.
  static void moveDevice(ProgramBuilder &from, ProgramBuilder &to, int device);
  // Under bf16_, the f32 values that stay f32: the parameters, their gradients, the loss, and
  // every value a reshard makes of one of them or they are made of (both ends of a message
  // agree on its element type).
  std::set<const ir::Value *> keptF32_;
  void findKeptF32();
  // The element type of `value`'s buffers.
  ir::DType storageType(const ir::Value &value) const;
  // Gradient synchronisation runs once per step, after every micro-batch; the backward ops
  // and the reshards of their results run in backward slots; everything else in forward ones.
  ir::Phase phaseOf(const ir::Op &op) const;
  // The device's stage in its pipeline and the pass order over its micro-batches.
  void assignStage(ir::DeviceProgram &program);
  void remember(int device, const ir::Value *value, int id);
  const ir::Annotation *annotationOf(const ir::Value *v) const;
  const std::vector<int64_t> &concrete(const ir::Value &v) const;
  // The buffer of `value` on `device` (its local piece under `layout`).
  int buffer(int device, const ir::Value *value, const ir::Annotation &layout, const std::string &suffix = "");
  // A new buffer named `name` holding the region `of` holds on `device` (its type too).
  // `value`: the value it belongs to (stamping renames it after its counterpart).
  int sibling(int device, int of, const std::string &name, const ir::Value *value = nullptr);
  void findBatchDims(const ir::Op &op, ShardingRuleCache &rules);
  bool isBatchDependent(const ir::Value &value) const { return batchDimsOf(value).has_value(); }
  static void markBatched(std::vector<char> &batched, int id) {
    if (static_cast<size_t>(id) >= batched.size())
      batched.resize(static_cast<size_t>(id) + 1, 0);
    batched[static_cast<size_t>(id)] = 1;
  }
  // Global regions of batch-dependent values in micro-batch coordinates: one micro-batch of
  // a pipeline holding samples [P, P + n) of the batch covers [P, P + n / m). Devices of one
  // pipeline agree on them, so the slices of the messages between them do too.
  ir::Box toMicrobatch(int device, const ir::Value &value, ir::Box box) const;
  int64_t sliceBytes(const std::vector<ir::Box> &slices, const ir::Value &value) const;
  void emit(const ir::Op &op);
  // Attributes that depend on the device's piece.
  void localize(const ir::Op &op, int d, ir::Instruction &in);
  // Logits split over the vocabulary: the loss of a row needs the maximum, the sum of
  // exponentials and the target's logit over every piece of the row. The kernel exchanges
  // them (Megatron's vocabulary-parallel cross-entropy) with the devices holding the other
  // pieces of the same rows (same replica): its group.
  void vocabParallel(const ir::Op &op, int d, ir::Instruction &in);
  // A reshard op: the steps resolve-communication chose for it (planned here only when its
  // shape was not bound then).
  void reshard(const ir::Op &op);
  const CommPlan &planFor(const ir::Annotation &from, const ir::Value *to, const ir::Annotation &toLayout);
  // One device of each replica group of the model's output reports its part of the loss.
  void reportLoss();
  // With several micro-batches, each backward pass adds its part of a parameter's gradient
  // to an accumulator (zero at the start of the step); the synchronisation and the optimizer
  // read the accumulator.
  void accumulate(const ir::Value *grad);
  // Moves a value (held in `source`'s buffers) into `to`'s buffers, as the steps of its
  // communication plan.
  void lowerSteps(const CommPlan &comm, DeviceBuffers source, const ir::Value *to,
                  const std::function<int64_t(size_t)> &tagOf, const ir::Location &loc);

  // Recompute.cpp
  bool sameStage(int a, int b) const;
  // Which forward instructions of `program` its backward passes repeat; the results of the
  // collectives tagged `keptTags` are kept instead. Messages between devices of one stage
  // (context parallelism's keys and values) are received again, unless `keptMessages` keeps
  // their data; the sends of `repeatedSends` are sent again. Messages between stages are not
  // repeated: what a stage receives is its checkpoint.
  std::vector<bool> recomputed(const ir::DeviceProgram &program, const std::set<int64_t> &keptTags,
                               const Messages &keptMessages, const Messages &repeatedSends);
  // `room`: instructions to make room for after the body's (the optimizer's, about).
  void addRecompute(ir::DeviceProgram &program, const std::vector<bool> &keep, size_t room);

  // OptimizerStep.cpp
  // After the gradients are synchronised, each device holding a parameter (or, under `zero`,
  // its share of the optimizer state) updates it: AdamW with its two moment buffers, or SGD.
  // Under `zero` each device updates its share, and an all-gather brings the updated shares
  // back into the parameter's layout.
  void optimizerStep(const ir::Value &param, const ir::Value &grad);
  // How many buffers optimizer-step adds on each device (a parameter's moments, and its shard
  // under `zero`; at most).
  std::map<int, size_t> optimizerBuffers() const;
  // The parameters' updates, stamped where alike (as specialize stamps ops).
  void updateAll();
  void classifyUpdates();
  // By position in plan_.gradients: the update's class, or -1. Shared by the parts.
  std::shared_ptr<std::vector<int>> updateClass_ = std::make_shared<std::vector<int>>();
  size_t stampedUpdates_ = 0, stampableUpdates_ = 0;
  // The gradient the optimizer reads for `grad`: synchronised, where that is another value.
  const ir::Value *syncedOf(const ir::Value &grad) const;
  // The optimizer's attributes (the plan's optimizer arguments), made once.
  std::optional<ir::SharedAttrs> optimizerAttrs_;

  // SchedulePipeline.cpp
  // Values a forward pass produces (or loads: the inputs) and a later backward pass of the
  // same micro-batch reads get one copy per micro-batch in flight on the device.
  // `perMicrobatch`: the device's batch-dependent buffers.
  static void stash(ir::DeviceProgram &program, const std::vector<char> &perMicrobatch);
  // The per-device parts of recompute and schedule-pipeline on up to threads_ threads, each
  // device's program (and its perMicrobatch_ set, which exists for each device) by one of them.
  void forEachProgram(const std::function<void(ir::DeviceProgram &)> &work);
};

} // namespace hspmd::passes
