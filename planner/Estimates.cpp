// Estimates.cpp - lint's first-order estimates: FLOPs of an op, work shares and memory per device
// (planner/Estimates.h).
#include "planner/Estimates.h"

#include "ir/Cost.h"

#include "planner/Topology.h"

#include <memory>

#include <algorithm>
#include <numeric>
#include <set>

namespace hspmd::planner {

namespace {

std::vector<int64_t> concreteSizes(const ir::Value &value) {
  return ir::sizesWithUnboundAsOne(value.type.shape);
}

double elements(const ir::Value &value) {
  double total = 1;
  for (int64_t size : concreteSizes(value))
    total *= static_cast<double>(size);
  return total;
}

} // namespace

double localBytes(const ir::Value &value, const ir::Annotation &annotation, int device) {
  auto pieces = ir::ownedRegion(annotation, concreteSizes(value), device);
  if (pieces.empty())
    return 0;
  return static_cast<double>(pieces[0].box.numElements()) * ir::dtypeBytes(value.type.dtype);
}

passes::LinkModel linkModel(const Cluster &cluster) {
  passes::LinkModel links;
  // The topology is a copy of what the links read: they outlive the cluster (driver::planLinks).
  auto topology = std::make_shared<Topology>(cluster);
  links.sameNode = [topology](int a, int b) { return topology->sameNode(a, b); };
  links.bandwidth = [topology](int a, int b) { return topology->bandwidth(a, b); };
  links.leastBandwidth = [topology](const std::vector<int> &group) { return topology->leastBandwidth(group); };
  return links;
}

double forwardFlops(const ir::Op &op) {
  using ir::OpKind;
  switch (op.kind) {
  case OpKind::MatMul: {
    auto sizes = concreteSizes(*op.operands[0]);
    return cost::matmulFlops(elements(*op.result()), static_cast<double>(sizes.back()));
  }
  case OpKind::Attention:
  case OpKind::AttentionGrad: {
    auto q = concreteSizes(*op.operands[0]), k = concreteSizes(*op.operands[1]);
    // [B, S, H, D] queries over T keys; causal: the queries and keys are the same positions.
    const double pairs = ir::boolAttr(op.attrs, "causal")
                             ? cost::causalPairs(static_cast<double>(q[1]), static_cast<double>(k[1]), 0)
                             : static_cast<double>(q[1]) * static_cast<double>(k[1]);
    return cost::attentionFlops(static_cast<double>(q[0]), static_cast<double>(q[2]), pairs,
                                static_cast<double>(q[3])) *
           (op.kind == OpKind::AttentionGrad ? cost::kAttentionBackwardFactor : 1.0);
  }
  case OpKind::RmsNorm:
  case OpKind::LayerNorm:
  case OpKind::Softmax:
  case OpKind::CrossEntropy:
    return cost::kNormFlops * elements(*op.operands[0]);
  case OpKind::RmsNormGrad:
  case OpKind::LayerNormGrad:
  case OpKind::CrossEntropyGrad:
    return cost::kNormGradFlops * elements(*op.operands[0]);
  case OpKind::Gelu:
  case OpKind::Silu:
  case OpKind::GeluGrad:
  case OpKind::SiluGrad:
    return cost::kActivationFlops * elements(*op.result());
  case OpKind::Param:
  case OpKind::Input:
  case OpKind::Constant:
  case OpKind::Reshape:
  case OpKind::Transpose:
  case OpKind::Unbind:
  case OpKind::Split:
  case OpKind::Concat:
  case OpKind::Slice:
  case OpKind::Reshard:
    return 0;
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Neg:
  case OpKind::Relu:
  case OpKind::ReluGrad:
  case OpKind::Sum:
  case OpKind::Mean:
  case OpKind::Embedding:
  case OpKind::EmbeddingGrad:
  case OpKind::Broadcast:
  case OpKind::Pad:
    return cost::kElementwiseFlops * elements(*op.result());
  } // no default: a new op kind is a compile error here (-Wswitch) until it has a cost
  return 0;
}

double workShare(const ir::Op &op, int plan, int device) {
  const auto &annotation = op.result()->annotations.at(plan);
  if (!annotation)
    return 0;
  const auto &subgroups = annotation->subgroups;
  for (size_t g = 0; g < subgroups.size(); ++g) {
    if (ir::devicePosition(subgroups[g].devices, device) < 0)
      continue;
    double share = 1;
    const auto &hetero = annotation->hetero;
    if (subgroups.size() > 1 && hetero.kind == ir::HeteroKind::Partial)
      share = 1.0 / static_cast<double>(subgroups.size());
    if (subgroups.size() > 1 && hetero.kind == ir::HeteroKind::Split) {
      auto sizes = concreteSizes(*op.result());
      auto pieces = ir::resolveHeteroSizes(hetero, subgroups.size(), sizes.at(hetero.dim));
      double total = std::accumulate(pieces.begin(), pieces.end(), 0.0);
      share = total > 0 ? static_cast<double>(pieces[g]) / total : 0;
    }
    for (const auto &axis : subgroups[g].axes)
      if (axis.kind != ir::AxisKind::Dup)
        share /= axis.count;
    return share;
  }
  return 0;
}

std::map<int, double> estimateCompute(const ir::Graph &graph, const passes::LoweredPlan &plan, const Cluster &cluster) {
  std::map<int, double> seconds;
  std::set<int> devices;
  for (const auto &op : graph.ops())
    if (const auto &a = op->results[0]->annotations.at(plan.index); a && passes::inForwardGraph(plan, *op))
      for (int d : a->devices())
        devices.insert(d);
  for (int d : devices)
    seconds[d] = 0;
  for (const auto &op : graph.ops()) {
    double flops = forwardFlops(*op);
    if (flops == 0 || !passes::inForwardGraph(plan, *op)) // the passes are priced from the forward ops
      continue;
    for (int d : devices) {
      if (d < 0 || d >= static_cast<int>(cluster.devices.size()))
        continue;
      double peak = cluster.typeOf(d).bf16Tflops * 1e12 * cost::kKernelEfficiency;
      seconds[d] += cost::kTrainingPasses * flops * workShare(*op, plan.index, d) / peak;
    }
  }
  return seconds;
}

std::map<int, DeviceMemory> estimateMemory(const ir::Graph &graph, const passes::LoweredPlan &plan) {
  std::map<int, DeviceMemory> memory;
  const ir::PlanSpec &spec = *plan.spec;
  const double stateFactor = cost::optimizerStateCopies(spec.optimizer, spec.optimizerArgs.count("momentum") > 0);
  for (const ir::Value *param : graph.params()) {
    const auto &annotation = param->annotations.at(plan.index);
    if (!annotation)
      continue;
    auto state = plan.optimizerState.find(param->name);
    for (int d : annotation->devices()) {
      double bytes = localBytes(*param, *annotation, d);
      memory[d].params += bytes;
      memory[d].grads += bytes;
      memory[d].optimizer +=
          stateFactor * (state != plan.optimizerState.end() ? localBytes(*param, state->second, d) : bytes);
    }
  }
  // Activations: everything an op produces is kept for the backward pass. Per device: one
  // micro-batch's worth times the micro-batches in flight (1F1B: stages - stage, at most
  // the micro-batch count; GPipe: all of them). With recomputation, only what enters the
  // stage is kept per micro-batch, plus one micro-batch's full activations.
  std::map<int, double> step, entering, residual;
  std::map<int, std::pair<int, int>> where; // device -> (pipeline, stage)
  for (const auto &op : graph.ops()) {
    if (op->kind == ir::OpKind::Param || op->kind == ir::OpKind::Constant || !passes::inForwardGraph(plan, *op))
      continue;
    if (auto stages = plan.stageOf.find(op.get()); stages != plan.stageOf.end())
      for (size_t p = 0; p < stages->second.size(); ++p)
        if (auto cells = plan.placement.find(op.get()); cells != plan.placement.end())
          for (const auto &cell : cells->second)
            for (int d : cell.devices)
              where.emplace(d, std::make_pair(static_cast<int>(p), stages->second[p]));
    for (const ir::Value *result : op->results) {
      const auto &annotation = result->annotations.at(plan.index);
      if (!annotation)
        continue;
      const bool enters = op->kind == ir::OpKind::Input ||
                          (op->kind == ir::OpKind::Reshard && !passes::isGradientSync(*op) &&
                           op->operands[0]->annotations.at(plan.index) &&
                           op->operands[0]->annotations.at(plan.index)->devices() != annotation->devices());
      for (int d : annotation->devices()) {
        double bytes = localBytes(*result, *annotation, d);
        step[d] += bytes;
        if (enters)
          entering[d] += bytes;
        if (op->kind == ir::OpKind::Add && result->type.rank() >= 3)
          residual[d] = std::max(residual[d], bytes); // the residual stream between layers
      }
    }
  }
  for (auto &[d, bytes] : step) {
    int microbatches = 1, stages = 1, stage = 0, layers = 1;
    if (auto it = where.find(d); it != where.end() && !spec.pipelines.empty()) {
      const auto &pipeline = spec.pipelines[it->second.first];
      microbatches = static_cast<int>(pipeline.microbatches);
      stages = static_cast<int>(pipeline.stages.size());
      stage = it->second.second;
      const auto &stageSpec = pipeline.stages[stage];
      layers = std::max(1, stageSpec.layerEnd - stageSpec.layerBegin);
    }
    DeviceMemory &m = memory[d];
    m.inFlight = cost::inFlightMicrobatches(spec.schedule == "gpipe", microbatches, stages, stage);
    const double perMicrobatch = bytes / microbatches;
    m.activations = perMicrobatch * m.inFlight;
    // Recomputing each layer keeps only the layer inputs (the residual stream) per
    // micro-batch in flight; in the backward pass one layer's activations are live again.
    const double checkpoints = (residual[d] / microbatches) * layers + entering[d] / microbatches;
    m.activationsRecompute = checkpoints * m.inFlight + perMicrobatch / layers;
  }
  return memory;
}

} // namespace hspmd::planner
