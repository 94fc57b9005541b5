#include "passes/ResolveCommunication.h"

namespace hspmd::passes {

void resolveCommunication(ir::Graph &graph, const LoweredPlan &plan, const LinkModel &links, const ReportFn &) {
  for (const auto &op : graph.ops()) {
    if (op->kind != ir::OpKind::Reshard || ir::intAttr(op->attrs, "plan", -1) != plan.index)
      continue;
    const auto &from = op->operands[0]->annotations.at(plan.index);
    const auto &to = op->result()->annotations.at(plan.index);
    auto shape = ir::concreteShape(op->result()->type.shape);
    if (!from || !to || !shape) {
      op->attrs["comm"] = std::string("deferred");
      continue;
    }
    CommPlan comm = planReshard(*shape, ir::dtypeBytes(op->result()->type.dtype), *from, *to, links);
    std::string kinds;
    for (const CommStep &step : comm.steps)
      kinds += (kinds.empty() ? "" : " + ") + std::string(commKindName(step.kind));
    op->attrs["comm"] = kinds;
    op->attrs["comm_bytes"] = comm.totalBytes();
  }
}

} // namespace hspmd::passes
