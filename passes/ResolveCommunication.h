// ResolveCommunication.h - resolve-communication: the communication plan of every reshard.
#pragma once

#include "passes/Communication.h"
#include "passes/LoweredPlan.h"
#include "passes/PassSupport.h"

namespace hspmd::passes {

/// `cluster`'s links with LinkModel::samePipeline set from `plan`'s pipelines (slices move
/// inside a pipeline where they can: each pipeline has its own micro-batches).
LinkModel withPipelines(const LinkModel &cluster, const LoweredPlan &plan);

/// Plans every reshard op of `plan` (over `links`), keeps the plan in
/// `plan.communication` for specialize to lower, and records it on the op: `comm` (the
/// steps' kinds, as "all-reduce" or "reduce-scatter + bsr"), `comm_bytes` (bytes received
/// over all devices) and `comm_steps` (every step: printCommSteps). A reshard of a value with
/// unbound symbolic dimensions is planned when the sizes are known: `comm = "deferred"`.
/// The ops are planned on up to `threads` threads (0: the machine's cores), in two halves of
/// the graph's order, each with its own cache of plans; the result is the same on any number.
void resolveCommunication(ir::Graph &graph, LoweredPlan &plan, const LinkModel &links, const ReportFn &report,
                          int threads = 1);

} // namespace hspmd::passes
