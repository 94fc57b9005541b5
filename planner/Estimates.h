// Estimates.h - first-order estimates lint uses: forward FLOPs of an op, each device's share
// of it under the deduced annotations, and memory per device. The simulator does not read
// them: it prices the DevicePrograms themselves (Simulator.h).
#pragma once

#include "passes/Communication.h"
#include "passes/LoweredPlan.h"
#include "planner/Cluster.h"

#include <map>
#include <string>

namespace hspmd::planner {

/// FLOPs of an op at its global shapes (unbound symbols count as 1), a backward op's as the
/// simulator prices its kernel. A causal attention over S positions costs about half of a full
/// one.
double forwardFlops(const ir::Op &op);

/// The fraction of an op's work a device does under the op's result annotation for `plan`:
/// its subgroup's share of a hetero split, divided over the split and partial axes.
double workShare(const ir::Op &op, int plan, int device);

struct DeviceMemory {
  double params = 0, grads = 0, optimizer = 0, activations = 0, activationsRecompute = 0;
  int inFlight = 1; // micro-batches whose activations are live at once
  double total(bool recompute) const {
    return params + grads + optimizer + (recompute ? activationsRecompute : activations);
  }
};

/// Memory per device for a deduced plan: parameters, gradients and optimizer state from
/// their annotations (state sharded under `zero`); activations of the in-flight
/// micro-batches under the plan's schedule, and what recomputation would leave of them.
std::map<int, DeviceMemory> estimateMemory(const ir::Graph &graph, const passes::LoweredPlan &plan);

/// Seconds of compute per step per device: forward + backward (3x forward FLOPs) at half of
/// the device type's peak.
std::map<int, double> estimateCompute(const ir::Graph &graph, const passes::LoweredPlan &plan, const Cluster &cluster);

/// Links of a cluster: devices of one node talk at the slower of their types' intra-node
/// bandwidth, others at the cluster's inter-node bandwidth.
passes::LinkModel linkModel(const Cluster &cluster);

using ir::memoryText; // (ir/DeviceProgram.h)

/// Bytes a device holds of a value under an annotation (0 when it holds none).
double localBytes(const ir::Value &value, const ir::Annotation &annotation, int device);

} // namespace hspmd::planner
