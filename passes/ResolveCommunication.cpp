// ResolveCommunication.cpp - resolve-communication: the communication plan of every reshard op,
// recorded on the op (passes/ResolveCommunication.h).
#include "passes/ResolveCommunication.h"

#include "passes/Parallel.h"

#include <algorithm>
#include <memory>
#include <optional>

namespace hspmd::passes {

LinkModel withPipelines(const LinkModel &cluster, const LoweredPlan &plan) {
  LinkModel links = cluster;
  if (!plan.spec || plan.spec->pipelines.size() < 2)
    return links;
  auto pipelineOf = std::make_shared<std::map<int, size_t>>();
  for (size_t p = 0; p < plan.spec->pipelines.size(); ++p)
    for (const ir::StageSpec &stage : plan.spec->pipelines[p].stages)
      for (int device : stage.devices)
        (*pipelineOf)[device] = p;
  links.samePipeline = [pipelineOf](int a, int b) {
    auto x = pipelineOf->find(a), y = pipelineOf->find(b);
    return x == pipelineOf->end() || y == pipelineOf->end() || x->second == y->second;
  };
  return links;
}

void resolveCommunication(ir::Graph &graph, LoweredPlan &plan, const LinkModel &links, const ReportFn &, int threads) {
  std::vector<ir::Op *> reshards;
  for (const auto &op : graph.ops())
    if (op->kind == ir::OpKind::Reshard && ir::intAttr(op->attrs, "plan", -1) == plan.index)
      reshards.push_back(op.get());
  // Each part plans a contiguous range of the ops (a model's layers: the same plans again,
  // which its own cache answers) and writes only its own ops' attributes and plans.
  std::vector<std::shared_ptr<const CommPlan>> comms(reshards.size());
  const size_t parts = std::max<size_t>(1, std::min(workerCount(threads), reshards.size() / 16));
  parallelFor(parts, static_cast<int>(parts), [&](size_t part) {
    ReshardPlans plans(links);
    for (size_t i = reshards.size() * part / parts; i < reshards.size() * (part + 1) / parts; ++i) {
      ir::Op *op = reshards[i];
      const auto &from = op->operands[0]->annotations.at(plan.index);
      const auto &to = op->result()->annotations.at(plan.index);
      auto shape = ir::concreteShape(op->result()->type.shape);
      if (!from || !to || !shape) {
        op->attrs["comm"] = std::string("deferred");
        continue;
      }
      std::shared_ptr<const CommPlan> comm = plans.share(*shape, ir::dtypeBytes(op->result()->type.dtype), *from, *to);
      std::string kinds;
      for (const CommStep &step : comm->steps)
        kinds += (kinds.empty() ? "" : " + ") + std::string(commKindName(step.kind));
      op->attrs["comm"] = kinds;
      op->attrs["comm_bytes"] = comm->totalBytes();
      op->attrs["comm_steps"] = printCommSteps(*comm);
      comms[i] = std::move(comm);
    }
  });
  for (size_t i = 0; i < reshards.size(); ++i)
    if (comms[i])
      plan.communication[reshards[i]] = std::move(comms[i]);
}

} // namespace hspmd::passes
