// DeviceProgram.h - what one device runs for one plan: its buffers (local shapes) and an
// ordered list of instructions - kernels on local shapes, collectives with their groups,
// sends and receives with their peers. Codegen, the runtime, the simulator and the
// cross-device verifier all read this one form.
#pragma once

#include "ir/Annotation.h"
#include "ir/Location.h"
#include "ir/Ops.h"
#include "ir/Type.h"

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hspmd::ir {

/// Where a buffer's contents come from at the start of a run: parameters (and, under
/// `zero`, their shards) and optimizer state from the plan-independent parameter store (by
/// name: "wte", "wte.adam_m"; "wte.shard" holds part of "wte"), inputs from the data, once
/// per micro-batch; everything else is computed.
enum class BufferRole { Temporary, Parameter, State, Input };

struct Buffer {
  int id = 0;
  std::string value; // the graph value it holds (its local piece)
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // local shape (of one micro-batch for activations)
  std::vector<int64_t> origin; // global index of its first element (empty: all zero)
  int64_t offset = -1;         // in the device's arena, set by memory planning (-1: not planned)
  /// Activations a later backward pass reads are stashed: one copy per micro-batch in flight
  /// (micro-batch k uses copy k % slots).
  int slots = 1;
  /// Gradient accumulators: zero at the start of each step, added to by every micro-batch.
  bool zeroed = false;
  BufferRole role = BufferRole::Temporary;
  int64_t bytes() const; // of one copy
  int64_t arenaBytes() const { return bytes() * slots; }
  /// The global region the buffer holds: [origin, origin + shape).
  Box region() const;
};

enum class InstrKind { Kernel, Collective, Send, Recv, Copy };

/// How a reshard moves data (docs/communication.md); a Collective instruction is one of the
/// collective kinds, named as commKindName prints it.
enum class CommKind {
  Identity,
  LocalSlice,
  AllReduce,
  ReduceScatter,
  AllGather,
  AllToAll,
  SendRecv,
  SplitAllReduce,
  SplitReduceScatter,
  SplitAllGather,
  Bsr,
};
std::string_view commKindName(CommKind kind);
/// The kind commKindName names `name`, if any.
std::optional<CommKind> parseCommKind(std::string_view name);
/// Whether the collective adds the members' partial sums (all-reduce, reduce-scatter and
/// their split forms) rather than copying pieces.
bool isReduction(CommKind kind);
/// Whether the step runs as one collective call per group (every kind but batched
/// send/receive, send/receive, identity and a local slice).
bool isCollective(CommKind kind);

/// When an instruction runs: once per micro-batch in the forward or backward pass, or once
/// per step after all micro-batches (gradient synchronisation, optimizer). Recompute
/// instructions re-run part of a stage's forward inside each backward pass, in body order,
/// each just before the backward instructions that read it (a layer's forward runs again
/// right before its backward), so a stage keeps only its layers' inputs from the forward.
enum class Phase { Forward, Recompute, Backward, Update };

/// The pass a phase's instructions run in: recompute instructions run in the backward pass.
inline Phase passOf(Phase phase) {
  return phase == Phase::Recompute ? Phase::Backward : phase;
}

/// A collective's members, in rank order, shared by the instructions that name the same
/// group (every member's instruction for one collective, and the copies later passes make):
/// a group of n devices is held once, not n times. (2000-way data parallelism held 50 groups
/// of 2000 devices in each of 2000 programs: 800 MB.) Reads as the vector it holds; assign a
/// new one to change it.
class DeviceGroup {
public:
  DeviceGroup() = default;
  DeviceGroup(std::vector<int> members) // NOLINT: converts
      : members_(members.empty() ? nullptr : std::make_shared<const std::vector<int>>(std::move(members))) {}
  DeviceGroup(std::initializer_list<int> members) : DeviceGroup(std::vector<int>(members)) {}
  operator const std::vector<int> &() const { return members(); } // NOLINT: converts
  const std::vector<int> &members() const {
    static const std::vector<int> none;
    return members_ ? *members_ : none;
  }
  std::vector<int>::const_iterator begin() const { return members().begin(); }
  std::vector<int>::const_iterator end() const { return members().end(); }
  size_t size() const { return members().size(); }
  bool empty() const { return !members_; }
  int operator[](size_t i) const { return members()[i]; }
  bool operator==(const DeviceGroup &other) const { return members_ == other.members_ || members() == other.members(); }
  bool operator==(const std::vector<int> &other) const { return members() == other; }
  bool operator<(const DeviceGroup &other) const { return members() < other.members(); }

private:
  std::shared_ptr<const std::vector<int>> members_; // null: no group
};

struct Instruction {
  InstrKind kind = InstrKind::Kernel;
  std::string op;                   // kernel name ("matmul") or collective ("all-reduce")
  std::vector<int> inputs, outputs; // buffer ids
  SharedAttrs attrs;                // kernel attributes, with local offsets ("query_offset")
  DeviceGroup group;                // collective members, in rank order
  int peer = -1;                    // send: receiver; recv: sender
  int64_t bytes = 0;                // collective: bytes this device receives (one micro-batch's); send/recv: message
  int64_t tag = 0;                  // the same on every device taking part
  /// Send, receive and copy: the global regions moved, in order (a send packs them into one
  /// message, the receive unpacks them); each lies inside the buffers' regions.
  std::vector<Box> slices;
  /// Reductions: which partial sum this device's input holds. Members holding the same one
  /// (replicas) contribute it once, from the first of them in group order.
  int partial = 0;
  Phase phase = Phase::Forward;
  Location loc;
  /// A collective's kind (parsed from `op`); nothing for other instructions.
  std::optional<CommKind> collective() const {
    return kind == InstrKind::Collective ? parseCommKind(op) : std::nullopt;
  }
};

/// One pass of the schedule: the forward or backward instructions for one micro-batch.
struct ScheduleSlot {
  Phase phase = Phase::Forward;
  int microbatch = 0;
  bool operator==(const ScheduleSlot &) const = default;
};

struct DeviceProgram {
  int device = 0;
  int plan = 0;
  int64_t peakBytes = -1; // the arena size memory planning needs (-1: not planned)
  // Pipeline schedule: the device's stage, its pipeline's stage count, micro-batch count and
  // size (samples), and the order of forward and backward passes over micro-batches.
  int stage = 0, stages = 1, microbatches = 1;
  int64_t microbatchSize = 0;
  std::string scheduleName = "1f1b";
  std::vector<ScheduleSlot> schedule;
  std::vector<Buffer> buffers;
  std::vector<Instruction> body;
  /// The buffer holding this device's part of the model's loss after each forward pass, when
  /// the device reports it: the global loss of a step is the sum, over reporting devices and
  /// micro-batches, of these values (one device per replica group reports).
  int lossBuffer = -1;
  /// Where the device's pipeline's samples begin in the global batch: micro-batch k of a
  /// pipeline with micro-batches of n samples holds samples batchStart + k n + [0, n).
  int64_t batchStart = 0;
};

/// The name in the parameter store a Parameter or State buffer reads and writes.
std::string storeName(const Buffer &buffer);

/// A byte count as people read memory, in every message that names one (lint, the planner,
/// a switch, a GPU's arena): "32.0 KiB" below a MiB, "13.6 MiB" below a GiB, else "2.31 GiB".
std::string memoryText(double bytes);

/// Text, one instruction a line:
///   program device 0 plan 0 peak 1048576 {
///     buffer %3 "blocks[0].wqkv" : f32[64, 96] at 4096
///     buffer %4 "x" : f32[2, 64, 64] origin [4, 0, 0] at 8192 slots 2
///     loss %9
///     batch start 4
///     kernel matmul %2, %3 -> %4 {} loc("nn.hspmd":76:39)
///     all-reduce %4 -> %5 group [0, 1] bytes 131072 tag 12
///     send %5 to 3 bytes 65536 tag 40 slices [4:6, 0:64, 0:64]
///   }
std::string printProgram(const DeviceProgram &program);

/// The order of passes for a stage: 1F1B runs min(m, stages - stage - 1) forward passes to
/// warm up, then alternates forward and backward, then drains the backward passes; GPipe
/// runs all forward passes, then all backward passes.
std::vector<ScheduleSlot> pipelineSchedule(const std::string &name, int stage, int stages, int microbatches);

/// The program as it executes: each scheduled pass's instructions in schedule order (a
/// backward pass starts with the recompute instructions), then the update instructions
/// once. Tags are made distinct per micro-batch and pass: see expandedTag.
DeviceProgram expandSchedule(const DeviceProgram &program);
/// expandSchedule's body without copying it: each instruction of the step in the order it
/// runs, with its tag for its micro-batch and pass (pointers into `program`).
struct ScheduledInstruction {
  const Instruction *instruction;
  int64_t tag;
  int microbatch = -1; // of a forward or backward pass; -1 in the update
};
std::vector<ScheduledInstruction> scheduledInstructions(const DeviceProgram &program);
/// The passes a step runs before the update: the program's schedule, or one forward and one
/// backward pass where it has none.
std::vector<ScheduleSlot> scheduleSlots(const DeviceProgram &program);
int64_t expandedTag(int64_t tag, Phase phase, int microbatch);

/// How many micro-batches are between their forward and backward pass at once, at most.
int maxInFlight(const std::vector<ScheduleSlot> &schedule);

/// Reads the text printProgram writes (print -> parse -> print is the identity).
std::optional<DeviceProgram> parseProgram(const std::string &text, std::string *error);

} // namespace hspmd::ir
