// Executor.h - runs one device's DeviceProgram: an arena of the program's peak size, the
// schedule's forward/recompute/backward passes over micro-batches, then the update; kernels
// from Kernels.h, communication through a Communicator (docs/cli.md defines what each
// instruction means).
#pragma once

#include "ir/DeviceProgram.h"
#include "runtime/Communicator.h"
#include "runtime/Data.h"
#include "runtime/Fusion.h"
#include "runtime/Kernels.h"
#include "runtime/Offload.h"
#include "runtime/ParameterStore.h"

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hspmd::runtime {

/// Time a device spent, in seconds: running kernels and copies, and waiting for or moving
/// data in communication. Idle is the rest of the wall time.
struct DeviceTimes {
  double busy = 0, communicating = 0;
};

/// One instruction's span, for --trace (Chrome trace events).
struct TraceEvent {
  std::string name;
  bool communication = false;
  double start = 0, seconds = 0; // since the run's start
};

/// Writes what DeviceExecutor::packState packed under `program` into the store's global
/// tensors (the store must already hold the parameters, for their shapes; optimizer state
/// takes its parameter's shape). Throws CheckpointError when the bytes do not fit the program.
void unpackState(const ir::DeviceProgram &program, const std::vector<char> &packed, ParameterStore &store);

/// The buffer a step leaves parameter `parameter`'s gradient in, before the update's
/// reductions (a partial sum): "grad.X.acc" where micro-batches accumulate, else "grad.X";
/// null where the program has none.
const ir::Buffer *gradientBuffer(const ir::DeviceProgram &program, const std::string &parameter);
/// "" when two programs of one device hold every parameter, optimizer state and gradient
/// alike (the same regions; gradients reduced over the same devices), so that one's state
/// copies into the other's and their gradients add (per micro-batch plans); else what differs.
std::string sameStateLayout(const ir::DeviceProgram &a, const ir::DeviceProgram &b);

class DeviceExecutor;
/// Generated code (hspmc build): one function per phase (forward, recompute, backward,
/// update) that runs that phase's instructions, each a call to instruction().
using PhaseFunction = void (*)(DeviceExecutor &, int microbatch);
using PhaseFunctions = std::array<PhaseFunction, 4>;

class DeviceExecutor {
public:
  DeviceExecutor(const ir::DeviceProgram &program, Communicator &communicator);

  /// Runs every kernel and copy in `offload`'s memory (a GPU's: runtime/gpu/GpuOffload.h),
  /// this executor's arena the host's staging area (runtime/Offload.h); communication runs on
  /// the host, its buffers staged down and up. Matmuls are not fused there.
  void offloadTo(std::unique_ptr<Offload> offload);

  /// The run has failed on this device: its offload gives up what it has in flight (Offload::abandon).
  void abandon() {
    if (offload_)
      offload_->abandon();
  }

  /// Runs the phases with generated functions instead of walking the program's body.
  void setPhases(const PhaseFunctions &phases) { phases_ = phases; }
  /// Runs instruction `index` of the body for `microbatch` (timed and traced): what
  /// generated code calls, and what the executor's own walk calls.
  void instruction(size_t index, int microbatch) { timed(program_.body[index], microbatch); }

  /// Copies the device's regions of the parameters and optimizer state in (missing state
  /// starts at zero). Throws CheckpointError when a parameter is missing or has another shape.
  void load(const ParameterStore &store);
  /// The device's regions of the parameters and optimizer state, packed one buffer after
  /// another in buffer order, and the step they are at: what unpackState writes into a store.
  std::vector<char> packState() const;

  /// The program it runs, and where buffer `buffer` (its first slot) lies in the arena: what a
  /// plan switch (runtime/Switch.h) copies state out of and into.
  const ir::DeviceProgram &program() const { return program_; }
  /// (Offloaded: the host's copy, brought up to date, and taken as written.)
  char *bufferData(int buffer) const {
    hostCurrent();
    deviceStale_ = offload_ != nullptr;
    return address(buffer, 0);
  }
  /// The optimizer steps taken so far (a plan switch carries the count over; load() reads it).
  void setStepsTaken(int64_t steps) { stepNumber_ = running_ = steps; }

  /// One training step on `batch` (optimizer step `step`, from 1). Returns the device's
  /// part of the loss (0 unless it reports the loss).
  double step(const Batch &batch, int64_t step) {
    const double loss = forwardBackward(batch, step);
    update();
    return loss;
  }
  /// The step in two halves, for a run that commits a step only when every device has
  /// finished its backward (runtime/Run.cpp): the forward and backward passes of every
  /// micro-batch (nothing of the state changes), then the optimizer's update.
  double forwardBackward(const Batch &batch, int64_t step);
  /// The update's communication before its first kernel (the gradients' reductions): what a
  /// run does before its commit, so that after it the update needs no peer unless the state
  /// is sharded (ZeRO's gathers). With generated phase functions it does nothing (update()
  /// runs the whole phase).
  void updateExchange();
  void update();
  /// The optimizer steps taken so far (an update counts once it has finished).
  int64_t stepsTaken() const { return stepNumber_; }
  /// Whether an update that did not finish (its communication failed) had already changed
  /// some of the state: the state is then neither the last step's nor this one's.
  bool partlyUpdated() const { return changed_ && stepNumber_ != running_; }
  /// Makes the device die (DeviceDeath) at the start of its first forward or backward slot of
  /// its next step: a failure injected at that point (hspmc train --fail).
  void dieAt(ir::Phase phase) { dieAt_ = phase; }
  /// A straggler (`slow FACTOR` in a fault trace): each kernel and copy takes `factor` times
  /// its CPU time (the device spins for the rest); 1: its own speed.
  void slowDown(double factor) { slowdown_ = factor; }
  /// Per micro-batch plans (runtime/Documents.h): this program's state copied from `other`'s
  /// (sameStateLayout), parameters only or with the optimizer state; `other`'s gradients of
  /// its last forward and backward passes added to this one's. Several plans run in one step:
  /// each its own tags (`offset` added to every one).
  void copyStateFrom(const DeviceExecutor &other, bool parametersOnly);
  void addGradientsFrom(const DeviceExecutor &other);
  void setTagOffset(int64_t offset) { tagOffset_ = offset; }
  /// Kernel and copy time as CPU time of the device's thread (hspmc train --stragglers): on a
  /// machine whose cores the devices share, the time others took is not the device's.
  void measureCpu() { measureCpu_ = true; }
  double kernelCpuSeconds() const { return kernelCpu_; }

  const DeviceTimes &times() const { return times_; }
  /// Records every instruction from now on, with times since `origin`.
  void trace(std::chrono::steady_clock::time_point origin) {
    tracing_ = true;
    origin_ = origin;
  }
  void stopTracing() { tracing_ = false; }
  const std::vector<TraceEvent> &events() const { return events_; }

private:
  const ir::DeviceProgram &program_;
  Communicator &comm_;
  std::vector<char> arena_;
  char *base_ = nullptr;       // arena_'s first 64-byte boundary
  Fusion fusion_;              // matmuls run with the transposes and sums around them (runtime/Fusion.h)
  std::vector<float> scratch_; // a fused matmul's result where it may not go straight to its buffer
  std::vector<std::vector<const ir::Instruction *>>
      byPhase_; // by pass: forward, (none), backward with recomputation, update
  DeviceTimes times_;
  bool tracing_ = false;
  std::chrono::steady_clock::time_point origin_;
  std::vector<TraceEvent> events_;
  int64_t stepNumber_ = 0;       // optimizer steps taken
  int64_t running_ = 0;          // the step being run: its tags and kernels' step
  const Batch *batch_ = nullptr; // the batch of the passes running (documents: their masks)
  int64_t tagOffset_ = 0;
  bool changed_ = false; // an update kernel of the step has run
  size_t exchanged_ = 0; // update instructions run by updateExchange()
  std::optional<ir::Phase> dieAt_;
  double slowdown_ = 1;
  bool measureCpu_ = false;
  double kernelCpu_ = 0;
  PhaseFunctions phases_{};
  std::unique_ptr<Offload> offload_;
  mutable bool hostStale_ = false;   // the offload wrote the arena since the host last copied it
  mutable bool deviceStale_ = false; // the host wrote its arena since the offload last had it

  /// Offloaded: the host arena as the offload's (a download where the offload wrote since),
  /// or the offload's as the host's (an upload where the host wrote since).
  void hostCurrent() const;
  void deviceCurrent();

  char *address(int buffer, int microbatch) const;
  /// The inputs of micro-batch `microbatch` put into the arena, and the context an
  /// instruction's kernel runs with.
  void loadInputs(const Batch &batch, int microbatch);
  KernelContext kernelContext(const ir::Instruction &in, int microbatch) const;
  /// The context of the vocabulary-parallel cross-entropy: the batch's scored targets.
  KernelContext lossContext(const ir::Instruction &in, int microbatch) const;
  /// The global batch row of row 0 of `buffer` (batch-major) in `microbatch`.
  int64_t batchRow(int buffer, int microbatch) const;
  void run(ir::Phase phase, int microbatch);
  void timed(const ir::Instruction &in, int microbatch);
  void execute(const ir::Instruction &in, int microbatch);
  /// Runs `in` in this executor's arena (execute: there, or in the offload's).
  void executeHere(const ir::Instruction &in, int microbatch);
  /// The communicator's tag of `in` for `microbatch` in the running step.
  int64_t tagOf(const ir::Instruction &in, int microbatch) const;
  void collective(const ir::Instruction &in, int microbatch, int64_t tag);
  /// The vocabulary-parallel cross-entropy `in`, its kernels here or on `offload`.
  void vocabParallelCrossEntropy(const ir::Instruction &in, int microbatch, int64_t tag, Offload *offload);
};

} // namespace hspmd::runtime
