// DeduceAnnotations.h - deduce-annotations: gives every value an annotation under one plan,
// inserting reshard ops where an op's operands disagree.
#pragma once

#include "passes/LoweredPlan.h"
#include "passes/PassSupport.h"

namespace hspmd::passes {

/// Runs deduction for `plan` (its index in the build is plan.index): fills
/// value->annotations[plan.index] for every value, inserts `reshard` ops (recorded in
/// plan.reshards) and fills plan.optimizerState. Values of other plans are not touched;
/// reshards inserted for other plans are identities here.
void deduceAnnotations(ir::Graph &graph, LoweredPlan &plan, const ReportFn &report);

} // namespace hspmd::passes
