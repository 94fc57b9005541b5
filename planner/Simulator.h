// Simulator.h - replays every device's DeviceProgram with a cost model (shared/DESIGN.md
// section 10), event by event: each device issues its scheduled step in order onto two
// streams, compute and communication, and an instruction starts when its stream is free,
// its inputs are written and its outputs no longer read (so communication overlaps the
// computation that does not depend on it; `overlap = false` gives one stream); a kernel takes
// its roofline time max(FLOPs / peak, bytes / memory bandwidth) divided by the kernel's
// efficiency (a fraction of the roofline, calibrated per kernel); a message arrives alpha +
// bytes / bandwidth after its send; a collective starts when its last member arrives and
// takes its ring time: the bytes each member receives (all-reduce of S bytes: 2(n-1)/n x S;
// reduce-scatter and all-gather: (n-1)/n x S) over the slowest link of the group, plus
// alpha per round (2(n-1) rounds for an all-reduce, n-1 otherwise).
#pragma once

#include "ir/Cost.h"
#include "ir/DeviceProgram.h"
#include "ir/KernelCost.h"
#include "passes/Communication.h"
#include "planner/Cluster.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace hspmd::planner {

struct CostModel {
  /// Per device: peak FLOP/s and memory bandwidth (bytes/s).
  std::function<double(int)> flops = [](int) { return 1e12; };
  std::function<double(int)> memoryBandwidth = [](int) { return 1e11; };
  /// The fraction of their roofline kernels reach, by kernel name ("matmul"), else `efficiency`.
  double efficiency = cost::kKernelEfficiency;
  std::map<std::string, double> kernelEfficiency;
  /// A fixed cost per kernel call by kernel name (seconds: launch, dispatch, allocation),
  /// added to the roofline time; none by default.
  std::map<std::string, double> kernelOverhead;
  passes::LinkModel links; // GB/s between devices, alpha in seconds
  /// Communication runs on its own stream, overlapping computation that does not need it
  /// (GPU runtimes); false: one stream per device (the CPU threads backend).
  bool overlap = true;
  /// Collectives as one rendezvous in which every member builds its output from every
  /// member's piece (the CPU runtimes' exchange): alpha once, then a reduction zeroes the
  /// output and adds each piece, a gather copies them; false: ring rounds, alpha per round
  /// (NCCL).
  bool exchange = false;
  /// Devices share this many cores (0: each device has its own; the CPU threads backend
  /// runs more devices than cores): kernels, and without overlap collectives, wait for one.
  int cores = 0;
  /// With `cores`: how many of them a kernel occupies (its threads: the CPU executor divides
  /// the cores among the devices of a process).
  int kernelCores = 1;
  /// With more devices than `cores`: how much longer every kernel takes (the operating
  /// system switching the devices' threads; measured by bench_simulate).
  double oversubscribed = 1.0;
  /// A device that waits longer than `spin` seconds for a peer (its collective's last member,
  /// its message) has gone to sleep, and waking it takes `wakeup` seconds more; a collective
  /// holds all its members until then (the CPU threads backend polls before it sleeps; none by
  /// default).
  double spin = 0, wakeup = 0;
  /// The fraction of its query-key pairs attention computes: below 1 for documents packed
  /// into a sequence under a block-diagonal mask, whose masked blocks a varlen attention
  /// kernel skips (docs/mixed-lengths.md); 1 for whole sequences and padded ones.
  double attentionDensity = 1.0;
  /// Micro-batch indices every device skips (their rows are padding only: runtime/Run.h,
  /// skipEmptyMicrobatches); none by default.
  std::vector<uint8_t> skipMicrobatch;
  /// Per device, by body index: instructions that take no time and leave no event (the CPU
  /// executor folds them into a fused matmul: runtime/Fusion.h; bench_simulate sets it).
  std::map<int, std::vector<bool>> skipInstruction;
};

/// The cost model of a cluster file: its device types' bf16 peak, HBM bandwidth and links.
CostModel costModel(const Cluster &cluster);

/// FLOPs and bytes moved of one kernel (ir/KernelCost.h).
using cost::KernelCost;
using cost::kernelCost;

struct SimulatedDevice {
  double busy = 0, communicating = 0, idle = 0; // seconds of the step
  int64_t peakBytes = 0;
};

struct SimulatedEvent {
  int device = 0;
  std::string name;
  bool communication = false;
  double start = 0, seconds = 0;
};

struct Simulation {
  double stepSeconds = 0;
  std::map<int, SimulatedDevice> devices;
  std::vector<SimulatedEvent> events; // when asked for
};

/// Simulates one training step of `programs` (one per device, as specialize made them).
Simulation simulate(const std::map<int, ir::DeviceProgram> &programs, const CostModel &model, bool keepEvents = false);

} // namespace hspmd::planner
