// SearchModel.cpp - the search's analytic cost model (SearchModel.h).
//
// The cost model, per micro-batch of one sequence of S positions on a stage of l layers
// held by a tensor-parallel group of t devices at speed v (bf16 peak x efficiency):
//   compute  = f x (l x (2 P_layer S + A_pair S(S+1)/2) [+ head FLOPs S]) / (t v), f = 3
//              (forward + backward), 4 with recomputation;
//   TP       = l x (4, or 6 with recomputation) ring all-reduces of S x hidden elements;
//   pipeline = the activation and its gradient to the next stage;
//   CP       = per layer, the keys and values of the other positions (all-gather, and its
//              reduce-scatter backward); HP: the all-to-alls of queries, keys, values, output.
// A pipeline of p stages runs m micro-batches in (m + p - 1) x (its slowest stage) (1F1B);
// the gradient sync is a ring all-reduce over the replicas of each parameter. Memory per
// device: weights, gradients and Adam moments (moments sharded over replicas under zero), the
// stashed layer inputs of the micro-batches in flight (all activations without
// recomputation), one layer's working set; attention is assumed fused (no S x S scores).
// Constants and collective formulas come from ir/Cost.h.
#include "planner/SearchModel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

namespace hspmd::planner::search {

double ringAllReduce(double bytes, int n, double gbps) {
  return cost::allReduceSeconds(bytes, n, gbps);
}

// Causal (query, key) pairs of the positions [a, b).
double pairs(int64_t a, int64_t b) {
  return (static_cast<double>(b) * static_cast<double>(b + 1) - static_cast<double>(a) * static_cast<double>(a + 1)) /
         2;
}

// One tensor-parallel group: t consecutive devices.
std::span<const int> groupOf(const StagePlan &stage, size_t g) {
  return std::span<const int>(stage.devices).subspan(g * static_cast<size_t>(stage.tp), static_cast<size_t>(stage.tp));
}

// The cost of a stage per micro-batch of `perReplica` sequences, with `inFlight` micro-batches
// stashed and its parameters replicated `replicas` times. `next` is the next stage's first
// device (-1: last stage).
StageCost stageCost(const Context &cx, const StagePlan &stage, bool recompute, bool zero, int inFlight,
                    double perReplica, int replicas, int next) {
  const ModelShape &m = cx.shape;
  // e: a parameter's bytes (weights, gradients, AdamW's moments); a: an activation's (kept,
  // working, and every message and TP all-reduce of one).
  const double e = m.elementBytes, a = cx.activationBytes(), t = stage.tp, f = cx.factor(recompute);
  const int64_t S = cx.request.sequence;
  const double hidden = static_cast<double>(m.hidden);
  const size_t groups = stage.devices.size() / static_cast<size_t>(stage.tp);
  StageCost cost;
  const double collectives = recompute ? 6 : 4;
  // Parameters: weights and gradients, AdamW's moments (sharded under zero).
  const double paramBytes =
      cost::trainingStateBytes(e / t, cost::optimizerStateCopies("adamw", false), zero ? replicas : 1);
  // Kept per layer and position: its input (a partial sum and its reduced copy under TP),
  // or all its activations; one layer's activations are live while it runs backward.
  const double stashPerLayer = recompute ? 2 * hidden : m.activationElements / t;
  auto working = [&](double positions) { return positions * m.activationElements * a / t; };
  const double vocab = m.headFlopsPerToken / (2 * hidden);
  double othersParams = 0;
  if (stage.first || stage.last)
    othersParams = m.otherParams * ((stage.first && stage.last) ? 1.0 : 0.5);
  if (!stage.cp.empty() || !stage.hp.empty()) {
    // One group per share: the slowest group sets the pace.
    // Each group receives from every other group over the link between them (its t devices
    // in parallel): groups in one node exchange over NVLink, only the rest over the network.
    const std::vector<int64_t> &lengths = stage.cp;
    int64_t at = 0;
    const double kv = 2.0 * static_cast<double>(m.kvDim);
    for (size_t g = 0; g < groups; ++g) {
      const auto devices = groupOf(stage, g);
      const double v = cx.slowest(devices) * t, tpBw = cx.ringBandwidth(devices);
      const double len = static_cast<double>(lengths[g]);
      const double share = stage.hp.empty() ? 0.0 : static_cast<double>(stage.hp[g]) / m.heads;
      double attention = 0, comm = stage.hp.empty() ? kAlpha : 2 * kAlpha;
      for (size_t h = 0; h < groups; ++h) {
        if (h == g)
          continue;
        const double theirs = static_cast<double>(lengths[h]);
        // Context: their positions' keys and values. Heads: their positions' queries, keys and
        // values of this group's heads, then this group's positions' attention output of
        // their heads.
        const double elements = stage.hp.empty() ? theirs * kv
                                                 : share * theirs * (hidden + kv) +
                                                       len * hidden * static_cast<double>(stage.hp[h]) / m.heads;
        comm += elements * a / t / (cx.topology.bandwidth(devices.front(), stage.devices[h * stage.tp]) * 1e9);
      }
      attention = stage.hp.empty() ? pairs(at, at + lengths[g]) * m.attentionFlopsPerPair
                                   : share * pairs(0, S) * m.attentionFlopsPerPair;
      at += lengths[g];
      const double layer =
          perReplica * (f * (2 * m.layerParams * len + attention) / v + len * cx.memorySeconds(devices, stage.tp, f) +
                        collectives * ringAllReduce(len * hidden * a, stage.tp, tpBw) + (recompute ? 3 : 2) * comm);
      cost.layerSeconds = std::max(cost.layerSeconds, layer);
      cost.fixedSeconds =
          std::max(cost.fixedSeconds, stage.last ? perReplica * f * m.headFlopsPerToken * len / v : 0.0);
      cost.layerBytes =
          std::max(cost.layerBytes, m.layerParams * paramBytes + inFlight * perReplica * len * stashPerLayer * a);
      cost.fixedBytes =
          std::max(cost.fixedBytes, othersParams * paramBytes + working(perReplica * len) +
                                        perReplica * static_cast<double>(S) * 2 * static_cast<double>(m.kvDim) * a / t +
                                        (stage.last ? perReplica * len * vocab * a / t : 0));
    }
    return cost;
  }
  const double v = cx.slowest(stage.devices) * t;
  double tpBw = 1e30; // the data-parallel replicas wait for the slowest group's all-reduces
  for (size_t g = 0; g < groups; ++g)
    tpBw = std::min(tpBw, cx.ringBandwidth(groupOf(stage, g)));
  const double positions = perReplica * static_cast<double>(S);
  cost.layerSeconds =
      f * perReplica * (2 * m.layerParams * static_cast<double>(S) + m.attentionFlopsPerPair * pairs(0, S)) / v +
      positions * cx.memorySeconds(stage.devices, stage.tp, f) +
      collectives * ringAllReduce(positions * hidden * a, stage.tp, tpBw);
  cost.fixedSeconds = stage.last ? f * positions * m.headFlopsPerToken / v : 0;
  if (next >= 0) // the activation forward, its gradient backward
    cost.fixedSeconds +=
        2 * (positions * hidden * a / (cx.topology.bandwidth(stage.devices.front(), next) * 1e9) + kAlpha);
  cost.layerBytes = m.layerParams * paramBytes + inFlight * positions * stashPerLayer * a;
  cost.fixedBytes = othersParams * paramBytes + working(positions) + (stage.last ? positions * vocab * a / t : 0);
  return cost;
}

// Replicas of each stage's parameters: its data-parallel groups (cp/hp groups count) times
// the pipelines holding its layers.
int stageReplicas(const StagePlan &stage, int pipelines) {
  return static_cast<int>(stage.devices.size()) / stage.tp * pipelines;
}

// The devices of `types` (all when empty) as tensor-parallel groups of t inside nodes, in
// device order; empty when a node's size is not a multiple of t.
std::vector<std::vector<int>> tpGroups(const Cluster &cluster, const std::set<std::string> &types, int t) {
  std::vector<std::vector<int>> groups;
  std::map<int, std::vector<int>> byNode;
  for (const auto &d : cluster.devices)
    if (types.empty() || types.count(d.type))
      byNode[d.node].push_back(d.id);
  for (const auto &[node, devices] : byNode) {
    if (devices.size() % static_cast<size_t>(t) != 0)
      return {};
    for (size_t i = 0; i < devices.size(); i += static_cast<size_t>(t))
      groups.emplace_back(devices.begin() + static_cast<long>(i), devices.begin() + static_cast<long>(i) + t);
  }
  return groups;
}

std::vector<int> tpDegrees(const Context &cx) {
  std::vector<int> degrees;
  for (int t = 1; t <= 64; t *= 2)
    if (cx.shape.heads % t == 0 && cx.shape.kvHeads % t == 0)
      degrees.push_back(t);
  return degrees;
}

LayerInputs layerInputs(const Context &cx, PipelinePlan &pipeline, bool recompute, bool zero, int pipelines) {
  LayerInputs in;
  const size_t p = pipeline.stages.size();
  for (size_t s = 0; s < p; ++s) {
    StagePlan &stage = pipeline.stages[s];
    stage.first = s == 0;
    stage.last = s + 1 == p;
    const int inFlight = static_cast<int>(p - s);
    const int next = s + 1 < p ? pipeline.stages[s + 1].devices.front() : -1;
    const StageCost cost = stageCost(cx, stage, recompute, zero, inFlight, 1, stageReplicas(stage, pipelines), next);
    in.layerSeconds.push_back(cost.layerSeconds);
    in.fixedSeconds.push_back(cost.fixedSeconds);
    double cap = 1e300;
    for (int d : stage.devices)
      cap = std::min(cap, cx.capacity(d));
    const double room = cap - cost.fixedBytes;
    in.maxLayers.push_back(room <= 0 ? 0 : static_cast<int64_t>(std::min(1e9, std::floor(room / cost.layerBytes))));
  }
  return in;
}

// Layers of each stage of `pipeline` by the local program (or as equal as they divide);
// false when they do not fit.
bool assignLayers(const Context &cx, PipelinePlan &pipeline, bool recompute, bool zero, int pipelines, bool equal) {
  const size_t p = pipeline.stages.size();
  const LayerInputs in = layerInputs(cx, pipeline, recompute, zero, pipelines);
  const int64_t L = cx.shape.layers;
  std::vector<int64_t> layers;
  if (equal) {
    for (size_t s = 0; s < p; ++s)
      layers.push_back(L / static_cast<int64_t>(p) + (static_cast<int64_t>(s) < L % static_cast<int64_t>(p) ? 1 : 0));
  } else {
    const LayerSplit split = splitLayers(L, in.layerSeconds, in.fixedSeconds, in.maxLayers);
    if (!split.feasible)
      return false;
    layers = split.layers;
  }
  int64_t at = 0;
  for (size_t s = 0; s < p; ++s) {
    if (layers[s] < 1)
      return false;
    pipeline.stages[s].layerBegin = at;
    pipeline.stages[s].layerEnd = at += layers[s];
  }
  return true;
}

PipelineCost pipelineCost(const Context &cx, const PipelinePlan &pipeline, bool recompute, bool zero, int pipelines) {
  PipelineCost cost;
  const size_t p = pipeline.stages.size();
  const int64_t m = pipeline.microbatches;
  double slowest = 0;
  for (size_t s = 0; s < p; ++s) {
    const StagePlan &stage = pipeline.stages[s];
    const int groups = static_cast<int>(stage.devices.size()) / stage.tp;
    const int dp = stage.cp.empty() && stage.hp.empty() ? groups : 1;
    const double perReplica = static_cast<double>(pipeline.sequences) / static_cast<double>(m) / dp;
    const int inFlight =
        cost::inFlightMicrobatches(false, static_cast<int>(m), static_cast<int>(p), static_cast<int>(s));
    const int next = s + 1 < p ? pipeline.stages[s + 1].devices.front() : -1;
    const int replicas = stageReplicas(stage, pipelines);
    const StageCost c = stageCost(cx, stage, recompute, zero, inFlight, perReplica, replicas, next);
    const double l = static_cast<double>(stage.layerEnd - stage.layerBegin);
    slowest = std::max(slowest, l * c.layerSeconds + c.fixedSeconds);
    const double bytes = l * c.layerBytes + c.fixedBytes;
    cost.peakBytes = std::max(cost.peakBytes, bytes);
    for (int d : stage.devices) {
      cost.fits = cost.fits && bytes <= cx.capacity(d);
      cost.memoryRatio = std::max(cost.memoryRatio, bytes / cx.capacity(d));
    }
    // Gradient sync over the replicas, then the optimizer step (memory-bound).
    const double ends = (stage.first || stage.last) ? ((stage.first && stage.last) ? 1.0 : 0.5) : 0.0;
    const double params = (l * cx.shape.layerParams + ends * cx.shape.otherParams) / stage.tp;
    const double bw = pipelines > 1 || groups > 1 ? cx.ringBandwidth(stage.devices) : 1e30;
    const double syncBw = pipelines > 1 ? std::min(bw, cx.cluster.interNodeGBps) : bw;
    // Every parameter is synchronised by collectives of its own (an all-reduce, or under zero a
    // reduce-scatter and an all-gather: as many ring rounds), each round paying the latency:
    // the tiny GPT's 51 tensors over 8 replicas are 3.5 ms of latency, 26x the rest of its step.
    const double tensors = l * cx.shape.layerTensors + ends * cx.shape.otherTensors;
    const double latency =
        replicas > 1 ? std::max(0.0, tensors - 1) * cost::allReduceRounds(replicas) * cost::kMessageLatency : 0;
    cost.sync = std::max(cost.sync, ringAllReduce(params * cx.shape.elementBytes, replicas, syncBw) + latency +
                                        params * 6 * cx.shape.elementBytes / (zero ? replicas : 1) /
                                            (cx.cluster.typeOf(stage.devices.front()).hbmGBps * 1e9));
  }
  cost.pipeline = static_cast<double>(m + static_cast<int64_t>(p) - 1) * slowest;
  return cost;
}

// The context-parallel program's inputs: each TP group's speed, and the time per position
// of its all-reduces over its own links (6 per layer under recomputation, as contextCost
// prices it; a PCIe group pays far more than an NVLink one) and of its memory-bound ops on
// its own memory.
std::vector<ShareDevice> shareDevices(const Context &cx, const StagePlan &stage) {
  std::vector<ShareDevice> devices;
  const double positionBytes = static_cast<double>(cx.shape.hidden) * cx.activationBytes();
  for (size_t g = 0; g < stage.devices.size() / static_cast<size_t>(stage.tp); ++g) {
    const auto group = groupOf(stage, g);
    const double t = stage.tp;
    const double allReduce = t > 1 ? 2 * (t - 1) / t * positionBytes / (cx.ringBandwidth(group) * 1e9) : 0;
    devices.push_back({cx.slowest(group) * t, 0,
                       static_cast<double>(cx.shape.layers) * (6 * allReduce + cx.memorySeconds(group, stage.tp, 4))});
  }
  return devices;
}
ContextCost contextCost(const Context &cx) {
  const ModelShape &m = cx.shape;
  const double f = 4; // priced with recomputation, the usual setting at long context
  return {f * static_cast<double>(m.layers) * m.attentionFlopsPerPair,
          f * (static_cast<double>(m.layers) * 2 * m.layerParams + m.headFlopsPerToken), 0};
}
int64_t contextBlock(int64_t S) {
  int64_t block = std::max<int64_t>(1, S / 128);
  while (S % block != 0)
    --block;
  return block;
}
// The head program's inputs: seconds per head and per block of positions, per TP group.
void headInputs(const Context &cx, const StagePlan &stage, int64_t block, std::vector<double> &headSeconds,
                std::vector<double> &blockSeconds) {
  const ModelShape &m = cx.shape;
  const ContextCost cost = contextCost(cx);
  const int64_t S = cx.request.sequence;
  for (const ShareDevice &d : shareDevices(cx, stage)) {
    headSeconds.push_back(cost.flopsPerPair * pairs(0, S) / m.heads / d.flops);
    blockSeconds.push_back(static_cast<double>(block) * (cost.flopsPerPosition / d.flops + d.secondsPerPosition));
  }
}
BatchInputs batchInputs(const Context &cx, const std::vector<PipelinePlan> &pipelines, bool recompute, bool zero,
                        int total) {
  BatchInputs in;
  for (PipelinePlan pipeline : pipelines) {
    pipeline.sequences = pipeline.microbatches = 1;
    const PipelineCost one =
        pipelineCost(cx, pipeline, recompute, zero, total > 0 ? total : static_cast<int>(pipelines.size()));
    in.stages.push_back(static_cast<int>(pipeline.stages.size()));
    in.tau.push_back(one.pipeline / static_cast<double>(pipeline.stages.size()));
    in.after.push_back(one.sync);
    in.most.push_back(cx.sequences());
  }
  return in;
}

// The stage without its TP groups that have nothing to do (no positions, no heads).
StagePlan withoutIdleGroups(const StagePlan &stage) {
  StagePlan kept = stage;
  kept.devices.clear();
  kept.cp.clear();
  kept.hp.clear();
  for (size_t g = 0; g < stage.devices.size() / static_cast<size_t>(stage.tp); ++g) {
    if (stage.cp[g] == 0 && (stage.hp.empty() || stage.hp[g] == 0))
      continue;
    const auto group = groupOf(stage, g);
    kept.devices.insert(kept.devices.end(), group.begin(), group.end());
    kept.cp.push_back(stage.cp[g]);
    if (!stage.hp.empty())
      kept.hp.push_back(stage.hp[g]);
  }
  return kept;
}

// The estimated step of a candidate (planner::estimate, with the cluster's context built once).
void priced(Candidate &candidate, const Context &cx) {
  candidate.seconds = candidate.peakBytes = candidate.memoryRatio = 0;
  candidate.fits = true;
  const int pipelines = static_cast<int>(candidate.pipelines.size());
  double sync = 0;
  for (const auto &pipeline : candidate.pipelines) {
    const PipelineCost cost = pipelineCost(cx, pipeline, candidate.recompute, candidate.zero, pipelines);
    candidate.seconds = std::max(candidate.seconds, cost.pipeline);
    sync = std::max(sync, cost.sync);
    candidate.peakBytes = std::max(candidate.peakBytes, cost.peakBytes);
    candidate.fits = candidate.fits && cost.fits;
    candidate.memoryRatio = std::max(candidate.memoryRatio, cost.memoryRatio);
  }
  candidate.seconds += sync;
}
} // namespace hspmd::planner::search

namespace hspmd::planner {

void estimate(Candidate &candidate, const ModelShape &shape, const Cluster &cluster, const PlanRequest &request) {
  search::priced(candidate, search::Context(shape, cluster, request));
}

} // namespace hspmd::planner
