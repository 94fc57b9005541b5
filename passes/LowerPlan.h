// LowerPlan.h - lower-plan: a plan's strategy sugar -> where each op runs and the
// annotations of the leaves (docs/annotations.md, "From sugar to annotations").
#pragma once

#include "passes/LoweredPlan.h"
#include "passes/PassSupport.h"

#include <optional>

namespace hspmd::passes {

/// Lowers plan `index` of the build. Returns nullopt after reporting what cannot be lowered.
/// `origin` (training builds) maps each backward op to its forward op: it runs on that
/// op's stage.
std::optional<LoweredPlan> lowerPlan(const ir::Graph &graph, const ir::PlanSpec &plan, int index,
                                     const ReportFn &report,
                                     const std::map<const ir::Op *, const ir::Op *> *origin = nullptr);

/// The mesh of a stage's devices: [data-parallel, tensor-parallel], axes of size 1 left out
/// (a single device: one axis of 1).
std::vector<int> stageMesh(size_t devices, int tp);

} // namespace hspmd::passes
