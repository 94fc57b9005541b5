// Search.cpp - the planner's global search and its analytic cost model (planner/Search.h).
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
#include "planner/Search.h"

#include "ir/Cost.h"
#include "planner/ContextShares.h"
#include "planner/Topology.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

namespace hspmd::planner {

namespace {

constexpr double kAlpha = cost::kMessageLatency; // seconds per message (ir/Cost.h)

double ringAllReduce(double bytes, int n, double gbps) {
  return cost::allReduceSeconds(bytes, n, gbps);
}

// Causal (query, key) pairs of the positions [a, b).
double pairs(int64_t a, int64_t b) {
  return (static_cast<double>(b) * static_cast<double>(b + 1) - static_cast<double>(a) * static_cast<double>(a + 1)) /
         2;
}

std::string rangeText(const std::vector<int> &devices) {
  bool contiguous = !devices.empty();
  for (size_t i = 1; i < devices.size(); ++i)
    contiguous = contiguous && devices[i] == devices[i - 1] + 1;
  if (contiguous && devices.size() > 2)
    return "[" + std::to_string(devices.front()) + ".." + std::to_string(devices.back() + 1) + "]";
  std::string text;
  for (int d : devices)
    text += (text.empty() ? "" : ", ") + std::to_string(d);
  return "[" + text + "]";
}

// What pricing a candidate needs of the cluster, computed once.
struct Context {
  const ModelShape &shape;
  const Cluster &cluster;
  const PlanRequest &request;
  Topology topology;
  Context(const ModelShape &s, const Cluster &c, const PlanRequest &r)
      : shape(s), cluster(c), request(r), topology(c) {}

  double speed(int d) const { return cluster.typeOf(d).bf16Tflops * 1e12 * request.efficiency; }
  double capacity(int d) const { return cluster.typeOf(d).memoryGiB * (1ull << 30) * request.memoryFraction; }
  double slowest(const std::vector<int> &devices) const {
    double v = speed(devices.front());
    for (int d : devices)
      v = std::min(v, speed(d));
    return v;
  }
  // The narrowest link of a ring over `devices` in their order.
  double ringBandwidth(const std::vector<int> &devices) const {
    double bw = 1e30;
    for (size_t i = 0; i < devices.size() && devices.size() > 1; ++i)
      bw = std::min(bw, topology.bandwidth(devices[i], devices[(i + 1) % devices.size()]));
    return bw;
  }
  int64_t sequences() const { return request.tokens / request.sequence; }
  // Seconds per position of one layer's memory-bound ops (forward and backward: `f` passes)
  // on the slowest memory of a TP group of `t` devices: the residual stream whole on every
  // rank, the rest split.
  double memorySeconds(const std::vector<int> &devices, int t, double f) const {
    double bw = 1e30;
    for (int d : devices)
      bw = std::min(bw, cluster.typeOf(d).hbmGBps * 1e9 * request.efficiency);
    return f * (shape.streamBytes + shape.splitBytes / t) / bw;
  }
  double factor(bool recompute) const { return recompute ? cost::kTrainingPassesRecompute : cost::kTrainingPasses; }
};

// One tensor-parallel group: t consecutive devices.
std::vector<int> groupOf(const StagePlan &stage, size_t g) {
  return {stage.devices.begin() + static_cast<long>(g) * stage.tp,
          stage.devices.begin() + static_cast<long>(g + 1) * stage.tp};
}

struct StageCost {
  double layerSeconds = 0, fixedSeconds = 0; // per micro-batch
  double layerBytes = 0, fixedBytes = 0;     // per device, the fullest
};

// The cost of a stage per micro-batch of `perReplica` sequences, with `inFlight` micro-batches
// stashed and its parameters replicated `replicas` times. `next` is the next stage's first
// device (-1: last stage).
StageCost stageCost(const Context &cx, const StagePlan &stage, bool recompute, bool zero, int inFlight,
                    double perReplica, int replicas, int next) {
  const ModelShape &m = cx.shape;
  const double e = m.elementBytes, t = stage.tp, f = cx.factor(recompute);
  const int64_t S = cx.request.sequence;
  const double hidden = static_cast<double>(m.hidden);
  const size_t groups = stage.devices.size() / static_cast<size_t>(stage.tp);
  StageCost cost;
  const double collectives = recompute ? 6 : 4;
  // Parameters: weights and gradients, moments (sharded under zero).
  const double paramBytes = e * (2 + (zero ? 2.0 / replicas : 2.0)) / t;
  // Kept per layer and position: its input (a partial sum and its reduced copy under TP),
  // or all its activations; one layer's activations are live while it runs backward.
  const double stashPerLayer = recompute ? 2 * hidden : m.activationElements / t;
  auto working = [&](double positions) { return positions * m.activationElements * e / t; };
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
        comm += elements * e / t / (cx.topology.bandwidth(devices.front(), stage.devices[h * stage.tp]) * 1e9);
      }
      attention = stage.hp.empty() ? pairs(at, at + lengths[g]) * m.attentionFlopsPerPair
                                   : share * pairs(0, S) * m.attentionFlopsPerPair;
      at += lengths[g];
      const double layer =
          perReplica * (f * (2 * m.layerParams * len + attention) / v + len * cx.memorySeconds(devices, stage.tp, f) +
                        collectives * ringAllReduce(len * hidden * e, stage.tp, tpBw) + (recompute ? 3 : 2) * comm);
      cost.layerSeconds = std::max(cost.layerSeconds, layer);
      cost.fixedSeconds =
          std::max(cost.fixedSeconds, stage.last ? perReplica * f * m.headFlopsPerToken * len / v : 0.0);
      cost.layerBytes =
          std::max(cost.layerBytes, m.layerParams * paramBytes + inFlight * perReplica * len * stashPerLayer * e);
      cost.fixedBytes =
          std::max(cost.fixedBytes, othersParams * paramBytes + working(perReplica * len) +
                                        perReplica * static_cast<double>(S) * 2 * static_cast<double>(m.kvDim) * e / t +
                                        (stage.last ? perReplica * len * vocab * e / t : 0));
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
      collectives * ringAllReduce(positions * hidden * e, stage.tp, tpBw);
  cost.fixedSeconds = stage.last ? f * positions * m.headFlopsPerToken / v : 0;
  if (next >= 0) // the activation forward, its gradient backward
    cost.fixedSeconds +=
        2 * (positions * hidden * e / (cx.topology.bandwidth(stage.devices.front(), next) * 1e9) + kAlpha);
  cost.layerBytes = m.layerParams * paramBytes + inFlight * positions * stashPerLayer * e;
  cost.fixedBytes = othersParams * paramBytes + working(positions) + (stage.last ? positions * vocab * e / t : 0);
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

// The inputs of the layer program for `pipeline` (sets its stages' first/last).
struct LayerInputs {
  std::vector<double> layerSeconds, fixedSeconds;
  std::vector<int64_t> maxLayers;
};
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

// The step of a pipeline of m micro-batches: (m + p - 1) x slowest stage; its stages' memory.
struct PipelineCost {
  double pipeline = 0, sync = 0, peakBytes = 0;
  bool fits = true;
};

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
    const int inFlight = static_cast<int>(std::min<int64_t>(m, static_cast<int64_t>(p - s)));
    const int next = s + 1 < p ? pipeline.stages[s + 1].devices.front() : -1;
    const int replicas = stageReplicas(stage, pipelines);
    const StageCost c = stageCost(cx, stage, recompute, zero, inFlight, perReplica, replicas, next);
    const double l = static_cast<double>(stage.layerEnd - stage.layerBegin);
    slowest = std::max(slowest, l * c.layerSeconds + c.fixedSeconds);
    const double bytes = l * c.layerBytes + c.fixedBytes;
    cost.peakBytes = std::max(cost.peakBytes, bytes);
    for (int d : stage.devices)
      cost.fits = cost.fits && bytes <= cx.capacity(d);
    // Gradient sync over the replicas, then the optimizer step (memory-bound).
    double params = l * cx.shape.layerParams;
    if (stage.first || stage.last)
      params += cx.shape.otherParams * ((stage.first && stage.last) ? 1.0 : 0.5);
    params /= stage.tp;
    const double bw = pipelines > 1 || groups > 1 ? cx.ringBandwidth(stage.devices) : 1e30;
    const double syncBw = pipelines > 1 ? std::min(bw, cx.cluster.interNodeGBps) : bw;
    cost.sync = std::max(cost.sync, ringAllReduce(params * cx.shape.elementBytes, replicas, syncBw) +
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
  const double positionBytes = static_cast<double>(cx.shape.hidden) * cx.shape.elementBytes;
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
// The batch program's inputs: each pipeline's stages, seconds per micro-batch, sync.
struct BatchInputs {
  std::vector<int> stages;
  std::vector<double> tau, after;
  std::vector<int64_t> most;
};
BatchInputs batchInputs(const Context &cx, std::vector<PipelinePlan> pipelines, bool recompute, bool zero) {
  BatchInputs in;
  for (auto &pipeline : pipelines) {
    pipeline.sequences = pipeline.microbatches = 1;
    const PipelineCost one = pipelineCost(cx, pipeline, recompute, zero, static_cast<int>(pipelines.size()));
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
  candidate.seconds = candidate.peakBytes = 0;
  candidate.fits = true;
  const int pipelines = static_cast<int>(candidate.pipelines.size());
  double sync = 0;
  for (const auto &pipeline : candidate.pipelines) {
    const PipelineCost cost = pipelineCost(cx, pipeline, candidate.recompute, candidate.zero, pipelines);
    candidate.seconds = std::max(candidate.seconds, cost.pipeline);
    sync = std::max(sync, cost.sync);
    candidate.peakBytes = std::max(candidate.peakBytes, cost.peakBytes);
    candidate.fits = candidate.fits && cost.fits;
  }
  candidate.seconds += sync;
}

// ---- candidate builders ---------------------------------------------------------------

// Micro-batches per pipeline: the divisor of its sequences per data-parallel replica whose
// estimated step is shortest (more fill the pipeline; fewer send fewer messages and keep
// fewer tiny kernels), preferring those that fit memory.
void chooseMicrobatches(Candidate &c, const Context &cx) {
  for (PipelinePlan &pipeline : c.pipelines) {
    const StagePlan &first = pipeline.stages.front();
    if (!first.cp.empty() || !first.hp.empty())
      continue;
    const int64_t perReplica = pipeline.sequences / static_cast<int64_t>(first.devices.size() / first.tp);
    int64_t best = pipeline.microbatches;
    double bestSeconds = std::numeric_limits<double>::infinity();
    bool bestFits = false;
    for (int64_t m = 1; m <= perReplica; ++m) {
      if (perReplica % m != 0)
        continue;
      pipeline.microbatches = m;
      priced(c, cx);
      if ((c.fits && !bestFits) || (c.fits == bestFits && c.seconds < bestSeconds)) {
        best = m;
        bestSeconds = c.seconds;
        bestFits = c.fits;
      }
    }
    pipeline.microbatches = best;
  }
}

// Prices `candidate`, first without recomputation, then with it when memory is short.
bool finish(Candidate &candidate, const Context &cx, std::vector<Candidate> &out) {
  chooseMicrobatches(candidate, cx);
  priced(candidate, cx);
  if (!candidate.fits && !candidate.recompute)
    return false; // the caller retries with recomputation
  out.push_back(candidate);
  return true;
}

// The cluster's device types, in device order.
std::vector<std::string> deviceTypes(const Cluster &cluster) {
  std::vector<std::string> types;
  for (const auto &d : cluster.devices)
    if (std::find(types.begin(), types.end(), d.type) == types.end())
      types.push_back(d.type);
  return types;
}

// Device sets a strategy may use: all devices (the empty set), and each type alone when there
// are several.
std::vector<std::set<std::string>> typeSubsets(const std::vector<std::string> &types) {
  std::vector<std::set<std::string>> subsets = {{}};
  if (types.size() > 1)
    for (const auto &type : types)
      subsets.push_back({type});
  return subsets;
}

// Pipelines per device type (hetero) or one Megatron-style pipeline (symmetric).
void pipelineCandidates(const Context &cx, std::vector<Candidate> &planned, std::vector<Candidate> &symmetric,
                        int &considered) {
  const ModelShape &m = cx.shape;
  const int64_t B = cx.sequences();
  const std::vector<std::string> types = deviceTypes(cx.cluster);
  // Symmetric: over all devices and over each type alone.
  const auto subsets = typeSubsets(types);
  for (const auto &subset : subsets)
    for (int t : tpDegrees(cx)) {
      const auto groups = tpGroups(cx.cluster, subset, t);
      const int64_t G = static_cast<int64_t>(groups.size());
      for (int64_t p = 1; p <= std::min<int64_t>(G, m.layers); ++p) {
        if (G % p != 0 || B % (G / p) != 0)
          continue;
        const int64_t dp = G / p;
        for (bool recompute : {false, true}) {
          ++considered;
          Candidate c;
          c.symmetric = true;
          c.recompute = recompute;
          c.zero = dp > 1;
          PipelinePlan pipeline{"main", B, B / dp, {}};
          for (int64_t s = 0; s < p; ++s) {
            StagePlan stage;
            stage.tp = t;
            for (int64_t g = s * dp; g < (s + 1) * dp; ++g)
              stage.devices.insert(stage.devices.end(), groups[static_cast<size_t>(g)].begin(),
                                   groups[static_cast<size_t>(g)].end());
            pipeline.stages.push_back(stage);
          }
          assignLayers(cx, pipeline, recompute, c.zero, 1, true);
          c.pipelines.push_back(pipeline);
          c.family = "pipeline";
          c.strategy = "symmetric: " + std::string(subset.empty() ? "all devices" : *subset.begin() + " only") +
                       ", one pipeline of " + std::to_string(p) + (p == 1 ? " stage" : " equal stages") + ", tp " +
                       std::to_string(t) + " dp " + std::to_string(dp);
          if (finish(c, cx, symmetric))
            break;
        }
      }
    }
  // Hetero: one pipeline over every TP group of the cluster, in device order, layers split
  // by speed and memory.
  for (int t : tpDegrees(cx)) {
    const auto groups = tpGroups(cx.cluster, {}, t);
    if (types.size() < 2 || groups.size() < 2 || static_cast<int64_t>(groups.size()) > m.layers)
      continue;
    for (bool recompute : {false, true}) {
      ++considered;
      Candidate c;
      c.recompute = recompute;
      c.family = "one pipeline";
      PipelinePlan pipeline{"main", B, B, {}};
      for (const auto &g : groups)
        pipeline.stages.push_back(StagePlan{g, t, 0, 0, false, false, {}, {}});
      if (!assignLayers(cx, pipeline, recompute, false, 1, false))
        continue;
      c.pipelines.push_back(pipeline);
      c.strategy = "one pipeline of " + std::to_string(groups.size()) + " stages tp " + std::to_string(t) +
                   " over all devices, layers by speed";
      if (finish(c, cx, planned))
        break;
    }
  }
  // Hetero: per type, options (tp t, k pipelines of p stages); the best few per type by their
  // own throughput, then every combination, sizes from the local programs.
  struct Option {
    int t = 1;
    int64_t k = 1, p = 1;
    double rate = 0; // sequences per second, alone
  };
  std::map<std::string, std::vector<Option>> options;
  for (const auto &type : types)
    for (int t : tpDegrees(cx)) {
      const auto groups = tpGroups(cx.cluster, {type}, t);
      const int64_t G = static_cast<int64_t>(groups.size());
      for (int64_t k = 1; k <= G; ++k) {
        if (G % k != 0 || G / k > m.layers)
          continue;
        Option o{t, k, G / k, 0};
        PipelinePlan pipeline{"x", 1, 1, {}};
        for (int64_t s = 0; s < o.p; ++s)
          pipeline.stages.push_back(StagePlan{groups[static_cast<size_t>(s)], t, 0, 0, false, false, {}, {}});
        if (!assignLayers(cx, pipeline, true, true, static_cast<int>(k), false))
          continue;
        double slowest = 0;
        for (size_t s = 0; s < pipeline.stages.size(); ++s) {
          const StageCost c = stageCost(cx, pipeline.stages[s], true, true, 1, 1, static_cast<int>(k), -1);
          slowest = std::max(slowest, static_cast<double>(pipeline.stages[s].layerEnd - pipeline.stages[s].layerBegin) *
                                              c.layerSeconds +
                                          c.fixedSeconds);
        }
        const double perPipeline = static_cast<double>(std::max<int64_t>(1, B / k));
        o.rate = static_cast<double>(k) * perPipeline / ((perPipeline + static_cast<double>(o.p) - 1) * slowest);
        options[type].push_back(o);
      }
      auto &list = options[type];
      std::sort(list.begin(), list.end(), [](const Option &a, const Option &b) { return a.rate > b.rate; });
      if (list.size() > 3)
        list.resize(3);
    }
  std::vector<std::string> usable;
  for (const auto &type : types)
    if (!options[type].empty())
      usable.push_back(type);
  if (usable.empty())
    return;
  std::vector<size_t> pick(usable.size(), 0);
  for (;;) {
    for (bool recompute : {false, true}) {
      ++considered;
      Candidate c;
      c.recompute = recompute;
      c.zero = true;
      std::vector<PipelinePlan> pipelines;
      std::string strategy;
      int total = 0;
      for (size_t i = 0; i < usable.size(); ++i)
        total += static_cast<int>(options[usable[i]][pick[i]].k);
      bool ok = true;
      for (size_t i = 0; i < usable.size() && ok; ++i) {
        const Option &o = options[usable[i]][pick[i]];
        const auto groups = tpGroups(cx.cluster, {usable[i]}, o.t);
        strategy += (strategy.empty() ? "" : "; ") + usable[i] + ": " + std::to_string(o.k) +
                    (o.k == 1 ? " pipeline of " : " pipelines of ") + std::to_string(o.p) +
                    (o.p == 1 ? " stage" : " stages") + " tp " + std::to_string(o.t);
        for (int64_t j = 0; j < o.k && ok; ++j) {
          PipelinePlan pipeline{usable[i] + std::to_string(j), 1, 1, {}};
          for (int64_t s = 0; s < o.p; ++s)
            pipeline.stages.push_back(
                StagePlan{groups[static_cast<size_t>(j * o.p + s)], o.t, 0, 0, false, false, {}, {}});
          ok = assignLayers(cx, pipeline, recompute, true, total, false);
          pipelines.push_back(pipeline);
        }
      }
      if (!ok)
        continue;
      // Sequences per pipeline (the other local program).
      const BatchInputs in = batchInputs(cx, pipelines, recompute, true);
      const BatchSplit split = splitBatch(B, in.stages, in.tau, in.after, in.most);
      if (!split.feasible)
        continue;
      for (size_t i = 0; i < pipelines.size(); ++i)
        if (split.sequences[i] > 0) {
          pipelines[i].sequences = pipelines[i].microbatches = split.sequences[i];
          c.pipelines.push_back(pipelines[i]);
        }
      c.family = "pipelines per type";
      c.strategy = "pipelines per type: " + strategy;
      if (finish(c, cx, planned))
        break;
    }
    size_t i = 0;
    while (i < pick.size() && ++pick[i] == options[usable[i]].size())
      pick[i++] = 0;
    if (i == pick.size())
      break;
  }
}

// One context-parallel (or head-parallel) group of TP groups, single stage.
void contextCandidates(const Context &cx, std::vector<Candidate> &planned, std::vector<Candidate> &symmetric,
                       int &considered) {
  const ModelShape &m = cx.shape;
  const int64_t S = cx.request.sequence, B = cx.sequences();
  const std::vector<std::string> types = deviceTypes(cx.cluster);
  const auto subsets = typeSubsets(types);
  const int64_t block = contextBlock(S), blocks = S / block;
  for (const auto &subset : subsets)
    for (int t : tpDegrees(cx)) {
      auto groups = tpGroups(cx.cluster, subset, t);
      const int64_t G = static_cast<int64_t>(groups.size());
      if (G < 2 || G > blocks)
        continue;
      // Slower groups first: the early positions cost least.
      std::stable_sort(groups.begin(), groups.end(),
                       [&](const auto &a, const auto &b) { return cx.slowest(a) < cx.slowest(b); });
      StagePlan base;
      base.tp = t;
      base.layerEnd = m.layers;
      base.first = base.last = true;
      for (const auto &g : groups)
        base.devices.insert(base.devices.end(), g.begin(), g.end());
      const std::string where = subset.empty() ? "all devices" : *subset.begin() + " only";
      const int64_t headUnit = static_cast<int64_t>(t) * (m.heads / m.kvHeads);
      for (int kind = 0; kind < 4; ++kind) { // cp equal, cp planned, hp equal, hp planned
        const bool hp = kind >= 2, equal = kind % 2 == 0;
        if (!subset.empty() && !equal && types.size() > 1)
          continue; // one type: the planned split is the equal one
        StagePlan stage = base;
        if (!hp && equal) {
          for (int64_t g = 0; g < G; ++g)
            stage.cp.push_back((blocks / G + (g < blocks % G ? 1 : 0)) * block);
        } else if (!hp) {
          const ContextPlan shares = planContextSharesFast(shareDevices(cx, base), S, block, contextCost(cx));
          if (!shares.error.empty())
            continue;
          stage.cp = shares.lengths;
        } else if (m.heads % (G * headUnit) == 0 && equal) {
          for (int64_t g = 0; g < G; ++g) {
            stage.hp.push_back(m.heads / G);
            stage.cp.push_back((blocks / G + (g < blocks % G ? 1 : 0)) * block);
          }
        } else if (!equal && m.heads % headUnit == 0) {
          std::vector<double> headSeconds, blockSeconds;
          headInputs(cx, base, block, headSeconds, blockSeconds);
          const HeadSplit split = splitHeads(m.heads, headUnit, blocks, headSeconds, blockSeconds);
          if (!split.feasible)
            continue;
          stage.hp = split.heads;
          for (int64_t b : split.blocks)
            stage.cp.push_back(b * block);
        } else {
          continue;
        }
        // A group with nothing to do is left out.
        const StagePlan kept = withoutIdleGroups(stage);
        if (kept.devices.size() / static_cast<size_t>(t) < 2)
          continue;
        for (bool recompute : {false, true}) {
          ++considered;
          Candidate c;
          c.symmetric = equal;
          c.recompute = recompute;
          c.zero = true;
          c.pipelines.push_back(PipelinePlan{"main", B, B, {kept}});
          c.family = hp ? "head" : "context";
          c.strategy = std::string(equal ? "symmetric: " : "") + (hp ? "head" : "context") + "-parallel group of " +
                       std::to_string(kept.devices.size() / static_cast<size_t>(t)) + " x tp " + std::to_string(t) +
                       " (" + where + ")" + (equal ? ", equal shares" : ", shares from the local program");
          if (finish(c, cx, equal ? symmetric : planned))
            break;
        }
      }
    }
}

} // namespace

ModelShape modelShape(const ir::Graph &graph, std::string &error) {
  ModelShape shape;
  shape.model = graph.name();
  std::map<const ir::Value *, size_t> firstUse;
  for (size_t i = 0; i < graph.ops().size(); ++i)
    for (const ir::Value *v : graph.ops()[i]->operands)
      firstUse.emplace(v, i);
  std::map<std::string, size_t> otherUse;
  size_t stackUse = graph.ops().size();
  double largestOther = 0;
  for (const ir::Value *p : graph.params()) {
    double n = 1;
    for (int64_t d : ir::sizesWithUnboundAsOne(p->type.shape))
      n *= static_cast<double>(d);
    shape.elementBytes = ir::dtypeBytes(p->type.dtype);
    const auto position = ir::stackPosition(p->name);
    const size_t use = firstUse.count(p) ? firstUse.at(p) : graph.ops().size();
    if (position && (shape.stack.empty() || position->stack == shape.stack)) {
      shape.stack = position->stack;
      const int64_t index = position->layer;
      shape.layers = std::max(shape.layers, index + 1);
      if (index == 0)
        shape.layerParams += n;
      stackUse = std::min(stackUse, use);
      continue;
    }
    const std::string name = p->name.substr(0, p->name.find('.'));
    otherUse[name] = std::min(otherUse.count(name) ? otherUse[name] : use, use);
    shape.otherParams += n;
    if (p->type.rank() == 2)
      largestOther = std::max(largestOther, n);
  }
  // Activations of one layer: the results of the forward ops of the stack's first layer
  // (ops reading its parameters, directly or through their operands), per token (B and S
  // unbound count as 1).
  std::map<const ir::Value *, int> layerOf;
  std::vector<std::pair<int64_t, double>> pendingBytes; // (stream's width or 0, elements) per op
  auto elementsPerToken = [](const ir::Value &v) {
    double n = 1;
    for (int64_t d : ir::sizesWithUnboundAsOne(v.type.shape))
      n *= static_cast<double>(d);
    return n;
  };
  auto lastDim = [](const ir::Value &v) {
    const auto sizes = ir::sizesWithUnboundAsOne(v.type.shape);
    return sizes.empty() ? int64_t{0} : sizes.back();
  };
  for (const ir::Value *p : graph.params())
    if (p->name.rfind(shape.stack + "[", 0) == 0 && !shape.stack.empty())
      layerOf[p] = static_cast<int>(std::stoll(p->name.substr(shape.stack.size() + 1)));
  for (const auto &op : graph.ops()) {
    if (op->kind == ir::OpKind::Param || op->kind == ir::OpKind::Input)
      continue;
    int layer = -1;
    for (const ir::Value *v : op->operands)
      if (auto it = layerOf.find(v); it != layerOf.end())
        layer = std::max(layer, it->second);
    for (const ir::Value *r : op->results) {
      layerOf[r] = layer;
      if (layer == 0)
        shape.activationElements += elementsPerToken(*r);
    }
    if (layer == 0 && op->kind != ir::OpKind::MatMul && op->kind != ir::OpKind::Attention && !op->results.empty()) {
      // Memory-bound ops: the activations read (rank 3 and more: not the weights) and the
      // result written.
      // The residual stream: a hidden-wide result from hidden-wide operands of its rank (the
      // reshape of attention's heads into a row is split, as the heads are).
      const ir::Value &result = *op->result();
      bool stream = true;
      double bytes = elementsPerToken(result);
      for (const ir::Value *v : op->operands)
        if (v->type.rank() >= 3) {
          bytes += elementsPerToken(*v);
          stream = stream && v->type.rank() == result.type.rank() && lastDim(*v) == lastDim(result);
        }
      pendingBytes.push_back({stream ? lastDim(result) : 0, bytes});
    }
  }
  for (const auto &[name, use] : otherUse)
    (use < stackUse ? shape.first : shape.last).push_back(name);
  shape.headFlopsPerToken = 2 * largestOther;
  for (const auto &op : graph.ops())
    if (op->kind == ir::OpKind::Attention && shape.hidden == 0) {
      const auto q = ir::sizesWithUnboundAsOne(op->operands[0]->type.shape);
      const auto k = ir::sizesWithUnboundAsOne(op->operands[1]->type.shape);
      shape.heads = static_cast<int>(q[2]);
      shape.kvHeads = static_cast<int>(k[2]);
      shape.hidden = q[2] * q[3];
      shape.kvDim = k[2] * k[3];
      shape.attentionFlopsPerPair = 4.0 * static_cast<double>(shape.hidden);
    }
  for (const auto &[last, elements] : pendingBytes)
    (last == shape.hidden ? shape.streamBytes : shape.splitBytes) += elements * shape.elementBytes;
  if (shape.stack.empty())
    error = "model '" + shape.model + "' has no stack of layers (`layers = N` of a sub-layer) to place on stages";
  else if (shape.hidden == 0)
    error = "model '" + shape.model + "' has no attention: the planner's cost model needs one";
  return shape;
}

void estimate(Candidate &candidate, const ModelShape &shape, const Cluster &cluster, const PlanRequest &request) {
  priced(candidate, Context(shape, cluster, request));
}

SearchResult searchPlans(const ModelShape &shape, const Cluster &cluster, const PlanRequest &request, size_t limit) {
  SearchResult result;
  const Context cx(shape, cluster, request);
  pipelineCandidates(cx, result.planned, result.symmetric, result.considered);
  contextCandidates(cx, result.planned, result.symmetric, result.considered);
  // The best `limit` of each family: the analytic model ranks within a family better than
  // across families, whose communication it prices more roughly.
  for (auto *list : {&result.planned, &result.symmetric}) {
    std::stable_sort(list->begin(), list->end(), [](const Candidate &a, const Candidate &b) {
      return a.fits != b.fits ? a.fits : a.seconds < b.seconds;
    });
    std::map<std::string, size_t> kept;
    std::vector<Candidate> best;
    for (Candidate &c : *list)
      if (kept[c.family]++ < limit)
        best.push_back(std::move(c));
    *list = std::move(best);
  }
  return result;
}

bool refineLocalPrograms(Candidate &candidate, const ModelShape &shape, const Cluster &cluster,
                         const PlanRequest &request, double timeLimitSeconds) {
  if (candidate.symmetric || candidate.pipelines.size() != 1 || candidate.pipelines[0].stages.size() != 1)
    return false;
  StagePlan &stage = candidate.pipelines[0].stages[0];
  if (stage.hp.empty())
    return false; // the other local programs' fast algorithms are exact
  const Context cx(shape, cluster, request);
  const int64_t block = contextBlock(request.sequence);
  std::vector<double> headSeconds, blockSeconds;
  headInputs(cx, stage, block, headSeconds, blockSeconds);
  const int64_t unit = static_cast<int64_t>(stage.tp) * (shape.heads / shape.kvHeads);
  const HeadSplit exact =
      splitHeadsExact(shape.heads, unit, request.sequence / block, headSeconds, blockSeconds, timeLimitSeconds);
  double current = 0;
  for (size_t g = 0; g < headSeconds.size(); ++g)
    current = std::max(current, static_cast<double>(stage.hp[g]) * headSeconds[g] +
                                    static_cast<double>(stage.cp[g] / block) * blockSeconds[g]);
  if (!exact.feasible || exact.seconds >= current * (1 - 1e-9))
    return false;
  // CBC balances computation; keep its answer only if the whole estimated step (with
  // communication) is no worse.
  Candidate refined = candidate;
  StagePlan &changed = refined.pipelines[0].stages[0];
  changed.hp = exact.heads;
  for (size_t g = 0; g < exact.blocks.size(); ++g)
    changed.cp[g] = exact.blocks[g] * block;
  changed = withoutIdleGroups(changed);
  if (changed.devices.size() / static_cast<size_t>(changed.tp) < 2)
    return false;
  estimate(refined, shape, cluster, request);
  if (refined.seconds > candidate.seconds || (candidate.fits && !refined.fits))
    return false;
  candidate = refined;
  return true;
}

LocalCheck checkLocalPrograms(const Candidate &candidate, const ModelShape &shape, const Cluster &cluster,
                              const PlanRequest &request, double timeLimitSeconds) {
  const Context cx(shape, cluster, request);
  LocalCheck check;
  auto gapText = [&](const std::string &what, double planned, double exact, bool optimal) {
    check.planned = planned;
    check.exact = exact;
    check.optimal = optimal;
    char line[256];
    std::snprintf(line, sizeof line, "%s: planned %.6g s, CBC %.6g s%s: gap %.2f%%", what.c_str(), planned, exact,
                  optimal ? " (proven optimal)" : " (time limit, best found)", 100 * (planned - exact) / exact);
    check.text = line;
  };
  if (candidate.symmetric) {
    check.text = "none (a symmetric plan: equal parts)";
    return check;
  }
  // The candidate's own answer (what the plan holds) against CBC's optimum.
  const StagePlan &stage = candidate.pipelines.front().stages.front();
  if (!stage.hp.empty()) {
    const int64_t block = contextBlock(request.sequence);
    std::vector<double> headSeconds, blockSeconds;
    headInputs(cx, stage, block, headSeconds, blockSeconds);
    const int64_t unit = static_cast<int64_t>(stage.tp) * (shape.heads / shape.kvHeads);
    double planned = 0;
    for (size_t g = 0; g < headSeconds.size(); ++g)
      planned = std::max(planned, static_cast<double>(stage.hp[g]) * headSeconds[g] +
                                      static_cast<double>(stage.cp[g] / block) * blockSeconds[g]);
    const HeadSplit exact =
        splitHeadsExact(shape.heads, unit, request.sequence / block, headSeconds, blockSeconds, timeLimitSeconds);
    gapText("heads and sequence shares", planned, exact.seconds, exact.optimal);
  } else if (!stage.cp.empty()) {
    const int64_t block = contextBlock(request.sequence);
    const auto devices = shareDevices(cx, stage);
    const ContextPlan exact = planContextShares(devices, request.sequence, block, contextCost(cx), timeLimitSeconds);
    gapText("sequence shares", contextMakespan(devices, stage.cp, contextCost(cx)), exact.makespan, exact.optimal);
  } else {
    std::vector<PipelinePlan> pipelines = candidate.pipelines;
    double worstPlanned = 0, worstExact = 0;
    bool optimal = true;
    for (auto &pipeline : pipelines) {
      const LayerInputs in =
          layerInputs(cx, pipeline, candidate.recompute, candidate.zero, static_cast<int>(pipelines.size()));
      for (size_t st = 0; st < pipeline.stages.size(); ++st)
        worstPlanned =
            std::max(worstPlanned, static_cast<double>(pipeline.stages[st].layerEnd - pipeline.stages[st].layerBegin) *
                                           in.layerSeconds[st] +
                                       in.fixedSeconds[st]);
      const LayerSplit exact = splitLayersExact(shape.layers, in.layerSeconds, in.fixedSeconds, in.maxLayers);
      worstExact = std::max(worstExact, exact.seconds);
      optimal = optimal && exact.optimal;
    }
    gapText("layers per stage (slowest stage)", worstPlanned, worstExact, optimal);
    const std::string layers = check.text;
    const BatchInputs in = batchInputs(cx, pipelines, candidate.recompute, candidate.zero);
    double planned = 0;
    for (size_t i = 0; i < pipelines.size(); ++i)
      planned =
          std::max(planned, static_cast<double>(pipelines[i].sequences + in.stages[i] - 1) * in.tau[i] + in.after[i]);
    const BatchSplit exact = splitBatchExact(cx.sequences(), in.stages, in.tau, in.after, in.most);
    gapText("sequences per pipeline", planned, exact.seconds, exact.optimal);
    check.text = layers + "; " + check.text;
  }
  return check;
}

std::string planText(const Candidate &candidate, const ModelShape &shape, const PlanRequest &request,
                     const std::string &name, const std::string &modelImport, const std::string &clusterPath) {
  std::string text = "// Planned by hspmc plan: " + candidate.strategy + ".\n";
  text += "import \"" + modelImport + "\"\n\nplan " + name + " for " + shape.model + " {\n";
  text += "  cluster \"" + clusterPath + "\"\n";
  text += "  bind B = " + std::to_string(request.tokens / request.sequence) +
          ", S = " + std::to_string(request.sequence) + "\n";
  text += "  optimizer adamw(lr = 1e-3)\n  schedule 1f1b\n";
  if (candidate.zero)
    text += "  zero\n";
  if (candidate.recompute)
    text += "  recompute\n";
  for (const auto &pipeline : candidate.pipelines) {
    text += "\n  pipeline " + pipeline.name + " share " + std::to_string(pipeline.sequences) + " microbatches " +
            std::to_string(pipeline.microbatches) + " {\n";
    for (const auto &stage : pipeline.stages) {
      text += "    stage devices " + rangeText(stage.devices);
      if (stage.tp > 1)
        text += " tp " + std::to_string(stage.tp);
      for (const auto *shares : {&stage.cp, &stage.hp}) {
        if (shares->empty())
          continue;
        std::string list;
        for (size_t g = 0; g < shares->size(); ++g)
          list += (g ? ", " : "") + rangeText(groupOf(stage, g)) + ": " + std::to_string((*shares)[g]);
        text += std::string(shares == &stage.cp ? " cp [" : " hp [") + list + "]";
      }
      text += " layers " + shape.stack;
      if (stage.layerBegin != 0 || stage.layerEnd != shape.layers)
        text += "[" + std::to_string(stage.layerBegin) + ":" + std::to_string(stage.layerEnd) + "]";
      std::vector<std::string> with;
      if (stage.first)
        with.insert(with.end(), shape.first.begin(), shape.first.end());
      if (stage.last)
        with.insert(with.end(), shape.last.begin(), shape.last.end());
      for (size_t i = 0; i < with.size(); ++i)
        text += (i ? ", " : " with ") + with[i];
      text += "\n";
    }
    text += "  }\n";
  }
  return text + "}\n";
}

} // namespace hspmd::planner
