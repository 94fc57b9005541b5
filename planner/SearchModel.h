// SearchModel.h - the search's analytic cost model (planner/SearchModel.cpp), shared by the
// candidate builders (Search.cpp) and the local programs' refinement (LocalCheck.cpp):
// pricing a stage, a pipeline, a context- or head-parallel group, a whole candidate. Internal
// to planner/.
#pragma once

#include "ir/Cost.h"
#include "planner/ContextShares.h"
#include "planner/Search.h"
#include "planner/Topology.h"

#include <set>
#include <span>
#include <string>
#include <vector>

namespace hspmd::planner::search {

constexpr double kAlpha = cost::kMessageLatency; // seconds per message (ir/Cost.h)

double ringAllReduce(double bytes, int n, double gbps);

// Causal (query, key) pairs of the positions [a, b).
double pairs(int64_t a, int64_t b);

// What pricing a candidate needs of the cluster, computed once.
struct Context {
  const ModelShape &shape;
  const Cluster &cluster;
  const PlanRequest &request;
  Topology topology;
  Context(const ModelShape &s, const Cluster &c, const PlanRequest &r) : shape(s), cluster(c), request(r), topology(c) {
    // Per device, once: the search asks for these millions of times at cluster scale (a type
    // lookup by name each time was most of a 1024-device search).
    for (size_t d = 0; d < c.devices.size(); ++d) {
      const DeviceType &type = c.typeOf(static_cast<int>(d));
      speed_.push_back(type.bf16Tflops * 1e12 * r.efficiency);
      capacity_.push_back(type.memoryGiB * (1ull << 30) * r.memoryFraction);
      hbm_.push_back(type.hbmGBps * 1e9 * r.efficiency);
    }
  }

  double speed(int d) const { return speed_.at(static_cast<size_t>(d)); }
  double capacity(int d) const { return capacity_.at(static_cast<size_t>(d)); }
  double slowest(std::span<const int> devices) const {
    double v = speed(devices.front());
    for (int d : devices)
      v = std::min(v, speed(d));
    return v;
  }
  // The narrowest link of a ring over `devices` in their order.
  double ringBandwidth(std::span<const int> devices) const {
    double bw = 1e30;
    for (size_t i = 0; i < devices.size() && devices.size() > 1; ++i)
      bw = std::min(bw, topology.bandwidth(devices[i], devices[(i + 1) % devices.size()]));
    return bw;
  }
  int64_t sequences() const { return request.tokens / request.sequence; }
  // Bytes of an activation element (and of the messages carrying activations): 2 in bf16,
  // else the model's own element type. Parameters keep shape.elementBytes.
  double activationBytes() const { return request.bf16 ? 2.0 : shape.elementBytes; }
  // Seconds per position of one layer's memory-bound ops (forward and backward: `f` passes)
  // on the slowest memory of a TP group of `t` devices: the residual stream whole on every
  // rank, the rest split (ModelShape counts them at its element type; bf16 moves fewer).
  double memorySeconds(std::span<const int> devices, int t, double f) const {
    double bw = 1e30;
    for (int d : devices)
      bw = std::min(bw, hbm_.at(static_cast<size_t>(d)));
    return f * (shape.streamBytes + shape.splitBytes / t) * activationBytes() / shape.elementBytes / bw;
  }
  double factor(bool recompute) const { return recompute ? cost::kTrainingPassesRecompute : cost::kTrainingPasses; }

private:
  std::vector<double> speed_, capacity_, hbm_; // by device id
};

// One tensor-parallel group: t consecutive devices (a view of the stage's).
std::span<const int> groupOf(const StagePlan &stage, size_t g);

struct StageCost {
  double layerSeconds = 0, fixedSeconds = 0; // per micro-batch
  double layerBytes = 0, fixedBytes = 0;     // per device, the fullest
};

// The cost of a stage per micro-batch of `perReplica` sequences, with `inFlight` micro-batches
// stashed and its parameters replicated `replicas` times. `next` is the next stage's first
// device (-1: last stage).
StageCost stageCost(const Context &cx, const StagePlan &stage, bool recompute, bool zero, int inFlight,
                    double perReplica, int replicas, int next);

// Replicas of each stage's parameters: its data-parallel groups (cp/hp groups count) times
// the pipelines holding its layers.
int stageReplicas(const StagePlan &stage, int pipelines);

// The devices of `types` (all when empty) as tensor-parallel groups of t inside nodes, in
// device order; empty when a node's size is not a multiple of t.
std::vector<std::vector<int>> tpGroups(const Cluster &cluster, const std::set<std::string> &types, int t);

std::vector<int> tpDegrees(const Context &cx);

// The inputs of the layer program for `pipeline` (sets its stages' first/last).
struct LayerInputs {
  std::vector<double> layerSeconds, fixedSeconds;
  std::vector<int64_t> maxLayers;
};

LayerInputs layerInputs(const Context &cx, PipelinePlan &pipeline, bool recompute, bool zero, int pipelines);

// Layers of each stage of `pipeline` by the local program (or as equal as they divide);
// false when they do not fit.
bool assignLayers(const Context &cx, PipelinePlan &pipeline, bool recompute, bool zero, int pipelines, bool equal);

// The step of a pipeline of m micro-batches: (m + p - 1) x slowest stage; its stages' memory.
struct PipelineCost {
  double pipeline = 0, sync = 0, peakBytes = 0, memoryRatio = 0;
  bool fits = true;
};

PipelineCost pipelineCost(const Context &cx, const PipelinePlan &pipeline, bool recompute, bool zero, int pipelines);

// The context-parallel program's inputs: each TP group's speed, and the time per position
// of its all-reduces over its own links (6 per layer under recomputation, as contextCost
// prices it; a PCIe group pays far more than an NVLink one) and of its memory-bound ops on
// its own memory.
std::vector<ShareDevice> shareDevices(const Context &cx, const StagePlan &stage);

ContextCost contextCost(const Context &cx);

int64_t contextBlock(int64_t S);

// The head program's inputs: seconds per head and per block of positions, per TP group.
void headInputs(const Context &cx, const StagePlan &stage, int64_t block, std::vector<double> &headSeconds,
                std::vector<double> &blockSeconds);

// The batch program's inputs: each pipeline's stages, seconds per micro-batch, sync.
struct BatchInputs {
  std::vector<int> stages;
  std::vector<double> tau, after;
  std::vector<int64_t> most;
};

// The batch program's inputs for `pipelines`, of `total` pipelines in all (their count when 0).
BatchInputs batchInputs(const Context &cx, const std::vector<PipelinePlan> &pipelines, bool recompute, bool zero,
                        int total = 0);

// The stage without its TP groups that have nothing to do (no positions, no heads).
StagePlan withoutIdleGroups(const StagePlan &stage);

// The estimated step of a candidate (planner::estimate, with the cluster's context built once).
void priced(Candidate &candidate, const Context &cx);

} // namespace hspmd::planner::search
