// ModelShape.cpp - what the search needs to know of a model (planner/Search.h's ModelShape),
// read from its elaborated graph: the stack of layers, parameters per layer and outside the
// stack, heads, hidden size, and the bytes of the memory-bound ops per position.
#include "planner/Search.h"

#include "ir/Graph.h"

#include <algorithm>
#include <map>

namespace hspmd::planner {

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
      if (index == 0) {
        shape.layerParams += n;
        ++shape.layerTensors;
      }
      stackUse = std::min(stackUse, use);
      continue;
    }
    const std::string name = p->name.substr(0, p->name.find('.'));
    otherUse[name] = std::min(otherUse.count(name) ? otherUse[name] : use, use);
    shape.paramsOf[name].push_back(p->name);
    shape.otherParams += n;
    ++shape.otherTensors;
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

} // namespace hspmd::planner
