// NcclPlan.h - the NCCL calls each device of a plan makes in one step, and the proof that
// they cannot deadlock (docs/gpu.md). Host-side logic of the NCCL backend: it needs no GPU
// and is what the backend issues, call for call.
//
// NCCL is stricter than the CPU backends, and the plan answers each way:
// - A send completes only once its receiver has posted the receive (CPU sends are buffered),
//   and one stream runs its calls one after another. Every ordered pair of devices that
//   exchange messages gets a channel of its own (a two-member communicator and a stream on
//   each side, as PyTorch keeps one communicator per pair for point-to-point): the k-th send
//   of a channel meets the k-th receive, and a pipeline stage's send of a forward's output
//   never waits behind its receive of a backward's gradient.
// - Messages carry no tags: the k-th send of a channel is the k-th receive. Where the
//   receiver's program takes a channel's messages in another order than the sender sends
//   them, its receives of that channel are staged: posted at the start of the step in the
//   sender's order into buffers of their own, each copied to its place where the program
//   receives it (memory: that channel's messages of one step).
// - Collectives run on one stream per device, in program order, one communicator per
//   distinct group of members (created once per plan). Kernels run on the compute stream;
//   events order each call after the kernels that write what it reads (and before those that
//   read what it writes). The plan replays the step with these streams and events and
//   reports the devices that would wait on each other forever.
//
// Collectives run as NCCL's own (ncclAllReduce, ncclAllGather, ncclReduceScatter) where the
// layout allows (every member holds the whole region and its own partial sum; or equal
// pieces, in group order, along the first dimension); every other collective (split, uneven,
// all-to-all, replicas of a partial sum) becomes messages over the channels, one per pair
// of members that must exchange a part.
#pragma once

#include "ir/DeviceProgram.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace hspmd::runtime::gpu {

enum class NcclCallKind { AllReduce, AllGather, ReduceScatter, Send, Recv };

struct NcclCall {
  NcclCallKind kind = NcclCallKind::Send;
  int communicator = -1; // collectives: an index into NcclPlan::communicators
  int peer = -1;         // messages: the other side of the channel
  int64_t count = 0;     // collectives: elements each member sends (all-gather) or holds
  int64_t bytes = 0;     // messages
  /// Messages: the global regions moved, in order (packed one after another): a send's or
  /// receive's slices, or the parts of its output a member takes from another.
  std::vector<ir::Box> boxes;
  int64_t tag = 0;                              // the instruction's tag for its micro-batch and pass (ir::expandedTag)
  bool max = false;                             // all-reduce: the maximum instead of the sum
  bool staged = false;                          // a receive posted at the start of the step into a buffer of its own
  const ir::Instruction *instruction = nullptr; // what it carries out (or part of)
};

/// Where a device's work runs: kernels and copies on the compute stream, collectives on the
/// collective stream, each channel's messages on a stream of their own (`peer`: its other side).
enum class NcclStreamKind { Compute, Collectives, SendTo, RecvFrom };
struct NcclStream {
  NcclStreamKind kind = NcclStreamKind::Compute;
  int peer = -1;
  auto operator<=>(const NcclStream &) const = default;
};

/// One unit of a device's step, in the order its host issues them: a kernel or copy of the
/// program (`call` -1: `instruction` for `microbatch`; a staged receive's copy out of its
/// staging buffer is the receive instruction), or one NCCL call. It starts once every step in
/// `after` has finished (earlier steps of the device: the one before it on its stream, and
/// those that write what it reads or read or write what it writes): on other streams, an
/// event each.
struct NcclStep {
  NcclStream stream;
  int call = -1;
  const ir::Instruction *instruction = nullptr;
  int microbatch = -1;
  std::vector<int> after;
};

struct NcclPlan {
  /// The distinct groups of members of collectives that run as NCCL's own (each one
  /// communicator), in order of first use by the lowest device.
  std::vector<std::vector<int>> communicators;
  /// The channels: (sender, receiver) pairs that exchange messages.
  std::set<std::pair<int, int>> channels;
  std::map<int, std::vector<NcclCall>> calls; // per device, in the order its host issues them
  std::map<int, std::vector<NcclStep>> steps; // per device: its whole step, streams and events
};

/// The NCCL calls of one step of `programs` (one plan, every device); the plan points into
/// `programs` (NcclCall::instruction, NcclStep::instruction), valid while they are. Null, with `error`
/// set to what stands in the way (a message order the two sides disagree on, devices that
/// would wait on each other), when the programs cannot run on NCCL as they are.
std::optional<NcclPlan> planNcclCalls(const std::map<int, ir::DeviceProgram> &programs, std::string *error);

/// One device's communicators, channels and calls, one a line:
///   communicator 0 = [0, 1]
///   channel 0 -> 2
///   all-reduce on 0 count 8192 tag 3392
///   send 32768 to 2 tag 6720
std::string printNcclCalls(const NcclPlan &plan, int device);

} // namespace hspmd::runtime::gpu
