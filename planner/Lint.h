// Lint.h - `hspmc lint`: checks a deduced plan against its model and cluster. Every check
// has a stable code, explained in docs/lint.md.
#pragma once

#include "passes/LoweredPlan.h"
#include "passes/PassSupport.h"
#include "planner/Cluster.h"

#include <map>

namespace hspmd::planner {

/// Reports every problem of `plan` (deduced on `graph`). `cluster` may be null: the device,
/// memory, balance and link checks are then skipped with a warning. `plannedPeak` (device ->
/// bytes) is the peak of each device's training program from memory planning; the memory
/// check (HS111) uses it where given, and its first-order estimate elsewhere.
/// How HS104 names optimizer state that `zero` shards unevenly: `hspmc plan` compiles a
/// finalist whose only errors say it again with `chunked` (planner/driver/PlanModel.cpp).
inline constexpr const char *kUnevenZeroState = "(sharded by `zero`)";

/// `part` runs the memory check alone or every check but it: a gate runs the others first and
/// compiles the training programs (whose peaks HS111 reads) only for a plan they pass.
enum class LintPart { All, AllButMemory, Memory };
void lintPlan(const ir::Graph &graph, const passes::LoweredPlan &plan, const Cluster *cluster,
              const passes::ReportFn &report, const std::map<int, int64_t> &plannedPeak = {},
              LintPart part = LintPart::All);

} // namespace hspmd::planner
