// Lint.h - `hspmc lint`: checks a deduced plan against its model and cluster. Every check
// has a stable code, explained in docs/lint.md.
#pragma once

#include "passes/LoweredPlan.h"
#include "passes/PassSupport.h"
#include "planner/Cluster.h"

#include <cstdint>
#include <map>
#include <vector>

namespace hspmd::planner {

/// Reports every problem of `plan` (deduced on `graph`). `cluster` may be null: the device,
/// memory, balance and link checks are then skipped with a warning. `planned` (by device) is
/// what memory planning gives of each device's training program; the memory check (HS111) uses
/// it where given, and its first-order estimate elsewhere.
/// How HS104 names optimizer state that `zero` shards unevenly: `hspmc plan` compiles a
/// finalist whose only errors say it again with `chunked` (planner/driver/PlanModel.cpp).
inline constexpr const char *kUnevenZeroState = "(sharded by `zero`)";

/// What the memory checks weigh of a device's training program: the peak of its memory plan
/// (HS111), and the bf16 copies of parameters a GPU keeps beside it (HS206): their bytes, in the
/// order a GPU allocates them, each while `reserve` bytes stay free (runtime/Fusion.h); the
/// driver leaves them out where they fit for certain.
struct PlannedMemory {
  int64_t peak = 0;
  std::vector<int64_t> bf16Copies;
  int64_t reserve = 0;
};

/// `part` runs the memory check alone or every check but it: a gate runs the others first and
/// compiles the training programs (whose peaks HS111 reads) only for a plan they pass.
enum class LintPart { All, AllButMemory, Memory };
void lintPlan(const ir::Graph &graph, const passes::LoweredPlan &plan, const Cluster *cluster,
              const passes::ReportFn &report, const std::map<int, PlannedMemory> &planned = {},
              LintPart part = LintPart::All);

} // namespace hspmd::planner
