// Tags.h - the tags of a DeviceProgram's communication, in one place. Every device computes
// the same tag for the same exchange from the op it lowers, without talking to the others:
//
//   base tag      op id x 64 + slot; slots 0..59 are a reshard's steps, 60 the exchanges of a
//                 vocabulary-parallel cross-entropy, 61..63 the steps that rebuild a parameter
//                 after a ZeRO update
//   expanded tag  base x 2048 + 2 x micro-batch (+ 1 when recomputed); base x 2048 + 2047 in
//                 the update (ir::expandSchedule), so at most kMaxMicrobatches micro-batches
//   step tag      expanded + step x 2^40 (the runtime: no step's messages meet the next's)
//
// Negative tags are the runtime's own, outside every program (the loss sum, the reports).
#pragma once

#include <cstdint>
#include <stdexcept>

namespace hspmd::ir::tags {

constexpr int64_t kSlotsPerOp = 64;
constexpr int64_t kReshardSteps = 60;
constexpr int64_t kPerBase = 2048;
/// Micro-batches of one pipeline whose tags stay apart (2 x m + 1 < 2047).
constexpr int64_t kMaxMicrobatches = 1023;
constexpr int kStepShift = 40;

/// Step `step` of the communication plan of reshard op `opId`.
inline int64_t reshardStep(int64_t opId, size_t step) {
  if (static_cast<int64_t>(step) >= kReshardSteps)
    throw std::logic_error("a reshard of more than 60 communication steps");
  return opId * kSlotsPerOp + static_cast<int64_t>(step);
}
/// The exchanges of the vocabulary-parallel cross-entropy op `opId`.
inline int64_t crossEntropy(int64_t opId) {
  return opId * kSlotsPerOp + 60;
}
/// Step `step` of rebuilding parameter `paramOpId` after a ZeRO update (an all-gather).
inline int64_t zeroGather(int64_t paramOpId, size_t step) {
  if (step >= 3)
    throw std::logic_error("rebuilding a parameter after a ZeRO update in more than 3 communication steps");
  return paramOpId * kSlotsPerOp + 61 + static_cast<int64_t>(step);
}
/// A base tag in one step of training.
inline int64_t ofStep(int64_t tag, int64_t step) {
  return tag + (step << kStepShift);
}

/// The runtime's own messages (runtime/Run.cpp).
constexpr int64_t kLossSum = -1;
constexpr int64_t kReport = -2;
constexpr int64_t kCheckpoint = -3;    // each device's state to the first, for --save-every
constexpr int64_t kComputeTimes = -4;  // each device's kernel time in a step, to all (--stragglers)
constexpr int64_t kStragglerVote = -5; // the first device's decision on a straggler, to all
constexpr int64_t kNcclChannel = -6;   // a channel's messages of the NCCL backend on the host (runtime/gpu/NcclRun.h)
constexpr int64_t kNcclUniqueId = -7; // an NCCL communicator's unique id, from its first member (runtime/gpu/GpuNccl.h)
/// The state transfer of the run's k-th plan switch (runtime/Switch.h).
inline int64_t planSwitch(int64_t k) {
  return -16 - k;
}
/// The survivors' check of their states after the k-th agreement (runtime/Run.cpp): three sums.
inline int64_t recoveryCheck(int64_t k, int part) {
  return -(int64_t{1} << 30) - 4 * k - part;
}

/// The MPI backend's `generation`-th barrier on its communicator (runtime/MpiRun.cpp).
inline int64_t barrier(int64_t generation) {
  return -(int64_t{1} << 40) - generation;
}

} // namespace hspmd::ir::tags
